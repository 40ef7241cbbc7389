"""While aimon starts, the collector is held and dataclass code comes from a cache."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import marshal
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aimon_cli import _startup
from aimon_cli._approval import Questions
from aimon_cli._runtime import ReplRuntimes
from aimon_cli._store import default_store
from aimon_core.runtime import RuntimeFlags, RuntimeSetupError
from aimon_core.testing import LoopbackModelServer, Reply
from tests.cli.conftest import MODEL, PROVIDER, provider_env


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Give `begin` a cache folder of its own; leave the collector as it was afterwards."""
    monkeypatch.setenv("AIMON_CACHE_DIR", str(tmp_path / "cache"))
    frozen = gc.get_freeze_count()
    try:
        yield tmp_path / "cache"
    finally:
        _startup.finish()
        gc.enable()
        if gc.get_freeze_count() != frozen:
            gc.unfreeze()


# Every kind of method dataclasses writes, defined in a module of its own (the class
# statement runs where `begin` may be in force), with `from __future__ import annotations`
# in force there as in aimon's modules.
_MODULE = '''
from __future__ import annotations
from dataclasses import dataclass, field, InitVar

@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    name: str
    tries: int = 1
    tags: tuple[str, ...] = ()
    extra: dict[str, int] = field(default_factory=dict, hash=False, compare=False)

@dataclass(order=True)
class Mutable:
    a: int
    b: list[int] = field(default_factory=list, repr=False)
    seed: InitVar[int] = 0
    def __post_init__(self, seed: int) -> None:
        self.b.append(seed)
'''


def _define(name: str) -> dict[str, Any]:
    module = type(sys)(name)
    sys.modules[name] = module  # dataclasses reads the module's names (InitVar) by its name
    try:
        exec(compile(_MODULE, f"<{name}>", "exec", dont_inherit=True), module.__dict__)
    finally:
        del sys.modules[name]
    return module.__dict__


def _behaviour(ns: dict[str, Any]) -> list[object]:
    step, mutable = ns["Step"], ns["Mutable"]
    one = step(name="x", tags=("a",))
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.name = "y"
    with pytest.raises(TypeError):
        step("x")  # keyword-only
    m = mutable(2, seed=7)
    same = step(name="x", tags=("a",))
    return [repr(one), one == same, hash(one) == hash(same),
            one.__slots__, step.__match_args__, repr(m), m.b, mutable(1) < mutable(2),
            str(step.__init__.__annotations__), [f.name for f in dataclasses.fields(step)],
            dataclasses.replace(one, tries=3).tries]


def test_classes_built_from_the_cache_behave_as_without_it(started: Path) -> None:
    plain = _behaviour(_define("plain"))
    _startup.begin()
    first = _behaviour(_define("first"))
    _startup.finish()
    _startup.begin()
    cache = _startup._cache
    assert cache is not None and cache.codes  # loaded from the file the first start wrote
    again = _behaviour(_define("again"))
    assert cache.compiled == 0  # every method came from the cache
    _startup.finish()
    assert plain == first == again
    assert "exec" not in vars(dataclasses)  # the builtin again


def test_a_torn_or_foreign_cache_file_is_an_empty_cache_and_is_rewritten(started: Path) -> None:
    file = _startup.cache_file(started)
    for content in (b"", b"\xe3garbage", b"\xe3" + b"\x00" * 40, b"{}"[:1],
                    marshal.dumps({"text": 1}), marshal.dumps([1])):
        started.mkdir(exist_ok=True)
        file.write_bytes(content)
        _startup.begin()
        assert _startup._cache is not None and _startup._cache.codes == {}
        _behaviour(_define(f"torn{len(content)}"))
        _startup.finish()
        assert len(marshal.loads(file.read_bytes())) > 5


def test_an_unwritable_cache_folder_costs_nothing_but_the_cache(started: Path,
                                                              tmp_path: Path) -> None:
    (tmp_path / "cache").write_text("a file where the folder should be")
    _startup.begin()
    assert _behaviour(_define("unwritable"))
    _startup.finish()
    assert gc.isenabled()


def test_begin_holds_the_collector_and_finish_resumes_it_past_what_exists(started: Path) -> None:
    _startup.begin()
    assert not gc.isenabled()
    kept: list[list[int]] = [[]]  # an object allocated while held
    _startup.finish()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # what start allocated is out of later collections
    assert gc.is_tracked(kept)


def test_finish_without_begin_changes_nothing(started: Path) -> None:
    frozen = gc.get_freeze_count()
    _startup.finish()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # a library caller's interpreter is left alone
    assert "exec" not in vars(dataclasses)


def test_the_repl_finishes_starting_when_its_first_session_cannot_open(
        tmp_path: Path, started: Path) -> None:
    runtimes = ReplRuntimes(tmp_path, RuntimeFlags(provider="nope"), default_store(),
                            Questions(tmp_path))
    _startup.begin()
    with pytest.raises(RuntimeSetupError, match="nope"):
        asyncio.run(runtimes.open_session(None))
    assert gc.isenabled()
    assert "exec" not in vars(dataclasses)


# Runs `aimon -p` in-process, noting whether the collector runs while the runtime is built
# and while the turn runs, and how many dataclass methods the start compiled; prints the
# notes as JSON where aimon would have exited.
PRINT_RUN = textwrap.dedent("""
    import gc, json, sys
    from aimon_cli import _commands, _exit, _print, _startup
    from aimon_core.runtime import AgentRuntimeRegistry

    notes = {}
    build, turn, save = AgentRuntimeRegistry.get, _print.run_print, _startup._CodeCache.save

    async def noted_build(self, *args, **kwargs):
        notes["collecting while building"] = gc.isenabled()
        return await build(self, *args, **kwargs)

    async def noted_turn(*args, **kwargs):
        import asyncio, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        notes["child watcher"] = type(asyncio.get_child_watcher()).__name__
        notes["collecting during the turn"] = gc.isenabled()
        notes["frozen"] = gc.get_freeze_count()
        return await turn(*args, **kwargs)

    def noted_save(self):
        notes["compiled"], notes["used"] = self.compiled, len(self.used)
        save(self)

    def noted_leave(code):
        notes["exit"] = code
        sys.stdout.write("\\n" + json.dumps(notes) + "\\n")
        sys.stdout.flush()
        _exit.os._exit(0)

    AgentRuntimeRegistry.get, _print.run_print = noted_build, noted_turn
    _startup._CodeCache.save, _exit.leave = noted_save, noted_leave
    _commands.run(sys.argv[1:])
""")


def test_print_mode_starts_with_the_collector_held_and_a_warm_cache_the_second_time(
        tmp_path: Path) -> None:
    runs = []
    with LoopbackModelServer([Reply(text="one"), Reply(text="two")], provider=PROVIDER) as server:
        env = {**os.environ, **provider_env(server), "AIMON_NO_LOCAL_PROBE": "1",
               "AIMON_CACHE_DIR": str(tmp_path / "cache")}
        for _ in range(2):
            done = subprocess.run(
                [sys.executable, "-c", PRINT_RUN, "--provider", PROVIDER, "--model", MODEL,
                 "-p", "hello"], cwd=tmp_path, env=env, capture_output=True, text=True,
                timeout=60, check=False)
            assert done.returncode == 0, done.stderr
            runs.append(json.loads(done.stdout.splitlines()[-1]))
    first, second = runs
    assert first["collecting while building"] is False
    assert first["collecting during the turn"] is True
    assert first["frozen"] > 10_000  # the modules, classes and SDK objects of the start
    assert first["exit"] == 0
    if sys.version_info < (3, 12):  # 3.12 watches pidfds itself (aimon_cli/_children.py)
        assert first["child watcher"] == "_PidfdWatcher"
    assert first["compiled"] == first["used"] > 400  # a cold cache: everything compiled once
    assert second["compiled"] == 0 and second["used"] == first["used"]
    assert list((tmp_path / "cache").iterdir()) == [_startup.cache_file(tmp_path / "cache")]
