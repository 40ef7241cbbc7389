"""What the `aimon` command does only while it starts: two costs of Python itself, cut.

From `begin` (before the heavy imports) to `finish` (once the first session is open):

- **The cyclic garbage collector is held.** Starting allocates a few hundred thousand objects
  that live as long as the process (modules, classes, the SDK's pydantic models) and almost no
  cyclic garbage; with the collector on, every 700 allocations start a collection that walks
  the young objects again. `import openai` alone: 0.592 s of CPU with it, 0.512 s without.
  `finish` moves everything allocated so far out of the collector's sight (`gc.freeze`: later
  full collections skip it) and turns it back on. Reference counting frees what is not cyclic
  all along.
- **Dataclass methods are compiled once per machine, not once per start.** `@dataclass`
  writes each class's `__init__`, `__repr__`, `__eq__`, `__hash__`, `__setattr__` … as source
  text and compiles it with `exec`: ~900 compilations on the print path, ~63 ms of CPU. While
  aimon starts, the `dataclasses` module's `exec` looks the text up in a cache of code objects
  kept in aimon's cache folder (`marshal`, keyed by the exact text, one file per Python bytecode
  version and optimisation level), and compiles what is missing exactly as `exec` would
  (no inherited `__future__` flags). The same text compiles to the same code, so a class is
  built exactly as without the cache. A missing, torn or foreign file is an empty cache; the
  file is rewritten (atomically, not fsynced: it can be made again) only when this start
  compiled something new.

The cache is written even under `PYTHONDONTWRITEBYTECODE`: that setting keeps `__pycache__`
folders out of source trees, and this is aimon's own cache folder (point `AIMON_CACHE_DIR` at an
unwritable place to have none). Only the command does this: `aimon_core` used as a library
leaves the interpreter alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import marshal
import sys
import types
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from typing import Any

# A cache holding more entries than this is rewritten with only what the writing start used:
# aimon upgrades and other Python versions' text do not pile up.
_MAX_ENTRIES = 6000


class _CodeCache:
    """Source text -> code object, loaded from and saved to one file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.codes: dict[str, types.CodeType] = _load(path)
        self.used: dict[str, types.CodeType] = {}
        self.compiled = 0

    def exec(self, source: Any, globals_: dict[str, Any] | None = None,
             locals_: Any = None) -> None:
        """Run `source` as the builtin `exec` would, compiling a text only once."""
        if not isinstance(source, str):
            exec(source, globals_, locals_)
            return
        code = self.codes.get(source)
        if code is None:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.codes[source] = code
            self.compiled += 1
        self.used[source] = code
        exec(code, globals_, locals_)

    def save(self) -> None:
        """Write the cache back if this start compiled something; errors are ignored."""
        if not self.compiled:
            return
        codes = self.codes if len(self.codes) <= _MAX_ENTRIES else self.used
        from aimon_core._atomic import private_dir, write_atomic

        with contextlib.suppress(OSError, ValueError):
            private_dir(self.path.parent)
            write_atomic(self.path, marshal.dumps(dict(codes)), durable=False)


def _load(path: Path) -> dict[str, types.CodeType]:
    try:
        loaded = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, types.CodeType) for k, v in loaded.items()):
        return {}
    return loaded


def cache_file(folder: Path) -> Path:
    """Return the dataclass code cache's file in `folder` for this interpreter."""
    tag = sys.implementation.cache_tag or sys.implementation.name
    return folder / f"dataclass-code-{tag}-{MAGIC_NUMBER.hex()}-O{sys.flags.optimize}.marshal"


_cache: _CodeCache | None = None


def begin() -> None:
    """Hold the collector and serve dataclass compilations from the cache, until `finish`."""
    global _cache
    gc.disable()
    if _cache is not None:
        return
    from aimon_core.session._paths import user_cache_dir

    _cache = _CodeCache(cache_file(user_cache_dir()))
    dataclasses.exec = _cache.exec  # type: ignore[attr-defined]  # shadows the builtin there


def finish() -> None:
    """End what `begin` started: save the cache, restore `exec`, resume collections.

    Does nothing when nothing was begun: a second session opening, or a caller (a test, an
    embedding program) that never called `begin`.
    """
    global _cache
    cache, _cache = _cache, None
    if cache is not None:
        with contextlib.suppress(AttributeError):
            del dataclasses.exec  # type: ignore[attr-defined]
        cache.save()
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
