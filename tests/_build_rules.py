"""The seeds' build rules as functions over a source tree, so tests run them on planted trees too.

- privacy (the seeds' `*._impl` rule): a module imports another package's private module
  (`_name`) or private name only from inside that package; from outside it uses the names
  the package's `__init__` exports.
- turn vocabulary (`TurnVocabularyArchitectureTest`): a turn is one kind of execution, a
  session's. Identifiers that speak of turns are defined only in the executor's package and
  the tiers that run a session's turns; every other package (tools, hooks, skills, subagents,
  the model clients, anything new) speaks of executions and may only hold the executor's
  `Turn` value under the name `turn`.
- release gate (`ReleaseGateMatchesCiGateTest`): `scripts/release` runs CI's own script and
  nothing else of its own as a gate.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

PACKAGES = ("aimon_core", "aimon_cli")

# Where a session's turn is the subject (an allowlist: a new package speaks of executions).
TURN_PACKAGES = frozenset({
    "aimon_core.agent",       # the executor and the Turn value it is given
    "aimon_core.live",        # runs a session's turns
    "aimon_core.session",     # a session's totals count its turns
    "aimon_core.service",     # hosts sessions, queues their turns
    "aimon_core.acp",         # an editor's prompt is a turn
    "aimon_core.command",     # slash commands run as a session's turn
    "aimon_core.checkpoint",  # a snapshot per turn
    "aimon_core.permission",  # the "this turn" approval scope
    "aimon_core.runtime",     # hands a session's Turn to its forks
    "aimon_core.compact",     # folds a session's earlier turns
    "aimon_core.workflow",    # its tasks run inside the session turn that started the run
    "aimon_core.observe",     # the per-turn cap; a session's turn is a trace's root
    "aimon_core.testing",     # the contract suites of the session tiers
    "aimon_cli",
})
_TURN = re.compile(r"turn", re.IGNORECASE)
_NOT_TURN = re.compile(r"return", re.IGNORECASE)


def modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> Iterator[tuple[str, Path]]:
    """Yield (dotted module name, path) of every module under `root`'s packages."""
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            yield ".".join(parts), path


def _is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _imported(node: ast.AST) -> Iterator[str]:
    match node:
        case ast.Import(names=names):
            yield from (alias.name for alias in names)
        case ast.ImportFrom(module=str(module), level=0, names=names):
            yield module
            yield from (f"{module}.{alias.name}" for alias in names if alias.name != "*")


def private_imports(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Return `module -> target` for each import of another package's private part."""
    found = []
    for module, path in modules(root, packages):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _imported(node):
                parts = target.split(".")
                private = next((i for i, part in enumerate(parts) if _is_private(part)), None)
                if private is None or parts[0] not in packages:
                    continue
                owner = ".".join(parts[:private])
                if module != owner and not module.startswith(owner + "."):
                    found.append(f"{module} -> {target}")
    return sorted(set(found))


def _defined_names(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        match node:
            case ast.FunctionDef(name=name) | ast.AsyncFunctionDef(name=name) | ast.ClassDef(
                    name=name):
                yield node.lineno, name
            case ast.Name(id=name, ctx=ast.Store()) | ast.Attribute(attr=name, ctx=ast.Store()):
                yield node.lineno, name
            case ast.arg(arg=name):
                yield node.lineno, name
            case ast.keyword(arg=str(name)):
                yield node.lineno, name


def turn_words(root: Path, allowed: frozenset[str] = TURN_PACKAGES,
               packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Return `module:line name` for each turn identifier defined outside `allowed`."""
    found = []
    for module, path in modules(root, packages):
        if any(module == pkg or module.startswith(pkg + ".") for pkg in allowed):
            continue
        for line, name in _defined_names(ast.parse(path.read_text(encoding="utf-8"))):
            # `turn` is the executor's Turn value, carried; anything else names a new concept.
            if name != "turn" and _TURN.search(_NOT_TURN.sub("", name)):
                found.append(f"{module}:{line} {name}")
    return sorted(set(found))
