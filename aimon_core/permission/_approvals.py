"""Remembered approvals: what a user's answer allows again, and the stores that keep it.

An answer is remembered as one entry, written by ``approval_rule``:

- a shell command that is one plain simple command (no operator, pipe, substitution, glob,
  assignment or redirection) becomes an exact-argv rule such as ``Bash(npm install left-pad)``.
  It is an ordinary allow rule, checked by the same matcher as settings rules, so it also allows
  that command next to read-only ones (``npm test | tail``) but never ``npm test; rm -rf ~``;
- any other command becomes ``Bash(exact:<command>)``, which allows that exact command text
  again and nothing broader: no sub-command of it is ever allowed alone;
- a path tool's call becomes a rule for the one resolved file (symlinks followed), with glob
  characters escaped: ``Edit(src/app.py)`` inside the project (``Edit`` rules cover Write and
  the other edit tools too), ``Edit(//etc/hosts)`` outside it. Agent-scope entries, which
  outlive the project, always use the absolute form;
- any other tool is remembered whole (``WebFetch``, ``mcp__server__tool``).

When no entry can say exactly this (a path with parentheses), the rule is "" and an answer
allows the one call only. Every entry is checked against the call before it is offered.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aimon_core._atomic import write_atomic
from aimon_core.agent import ApprovalAnswer as ApprovalAnswer
from aimon_core.agent import ApprovalRequest as ApprovalRequest
from aimon_core.agent import ApprovalRequested as ApprovalRequested
from aimon_core.agent import ApprovalResolved as ApprovalResolved
from aimon_core.agent import ApprovalScope as ApprovalScope
from aimon_core.permission._bash import parse_command
from aimon_core.permission._gate import decide
from aimon_core.permission._matcher import evaluate_command
from aimon_core.permission._rules import (
    EDIT_TOOLS,
    READ_TOOLS,
    ExactPattern,
    PermissionRules,
    Rule,
    RuleError,
    Verdict,
    command_pattern,
    parse_rule,
)
from aimon_core.tools import (
    CommandSubject,
    DomainSubject,
    NameSubject,
    PathSubject,
    RuleSubject,
    Tool,
    subject_name,
    url_host,
)

log = logging.getLogger(__name__)

_EXACT = re.compile(r"(?P<tool>[A-Za-z_][A-Za-z0-9_.-]*)\(exact:(?P<command>.*)\)", re.DOTALL)
_GLOB_CHAR = re.compile(r"[*?\[]")
_FILE_VERSION = 1


def approval_rule(
    tool: Tool,
    tool_input: Mapping[str, Any],
    *,
    project_root: Path,
    cwd: Path | None = None,
    absolute: bool = False,
) -> str:
    """Return the entry that allows this call again (see the module docs), or ""."""
    match tool.subject:
        case CommandSubject(param=param):
            command = tool_input.get(param)
            if not isinstance(command, str) or not command.strip():
                return ""
            return _command_rule(tool.name, command)
        case PathSubject(param=param, writes=writes):
            path = tool_input.get(param)
            if not isinstance(path, str) or not path:
                if writes:
                    return ""
                path = "."
            candidate = _path_rule(tool.name, path, project_root, cwd, absolute=absolute)
        case DomainSubject(param=param):
            url = tool_input.get(param)
            found = url_host(url) if isinstance(url, str) else None
            if found is None:
                return ""
            candidate = f"{tool.name}(domain:{found[0]})"
        case NameSubject(param=param):
            name = tool_input.get(param)
            candidate = (f"{tool.name}({subject_name(name)})" if isinstance(name, str)
                         else tool.name)
        case RuleSubject(matcher=matcher):
            try:
                specifier = matcher.specifier(tool_input)
            except Exception:
                return ""
            if not specifier:
                return ""
            candidate = f"{tool.name}({specifier})"
        case _:
            candidate = tool.name
    try:
        rule = parse_rule(candidate)
    except RuleError:
        return ""
    decision = decide(tool, tool_input, PermissionRules(allow=(rule,)), project_root, cwd=cwd)
    return candidate if decision.verdict is Verdict.ALLOW and decision.rule == rule.text else ""


def _command_rule(tool_name: str, command: str) -> str:
    parsed = parse_command(command)
    if len(parsed.commands) == 1 and not parsed.risky:
        simple = parsed.commands[0]
        plain = not (simple.assignments or simple.redirects or simple.dynamic)
        if plain and simple.argv and _is_exact_argv(shlex.join(simple.argv), simple.argv):
            text = f"{tool_name}({shlex.join(simple.argv)})"
            with contextlib.suppress(RuleError):
                rule = parse_rule(text)
                decision = evaluate_command(command, PermissionRules(allow=(rule,)),
                                            tool=tool_name)
                if decision.verdict is Verdict.ALLOW:
                    return text
    return exact_command_entry(tool_name, command)


def _is_exact_argv(specifier: str, argv: tuple[str, ...]) -> bool:
    """Tell whether a rule pattern reads ``specifier`` as exactly ``argv``, no wildcard."""
    try:
        pattern = command_pattern(specifier)
    except RuleError:
        return False
    return isinstance(pattern, ExactPattern) and pattern.words == argv


def exact_command_entry(tool_name: str, command: str) -> str:
    """Return the entry that allows exactly ``command`` (stripped) and nothing else."""
    return f"{tool_name}(exact:{command.strip()})"


def _path_rule(tool_name: str, path: str, project_root: Path, cwd: Path | None, *,
               absolute: bool) -> str:
    if "\x00" in path:
        return ""
    family = "Edit" if tool_name in EDIT_TOOLS else "Read" if tool_name in READ_TOOLS else tool_name
    joined = Path(cwd or project_root).absolute() / os.path.expanduser(path)  # noqa: PTH111
    real = Path(os.path.realpath(joined))
    base = Path(os.path.realpath(project_root))
    if absolute or real == base or not real.is_relative_to(base):
        return f"{family}(//{_escape_glob(str(real)).lstrip('/')})"
    relative = _escape_glob(real.relative_to(base).as_posix())
    # `~` would anchor the rule at the home directory.
    return f"{family}(./{relative})" if relative.startswith("~") else f"{family}({relative})"


def _escape_glob(text: str) -> str:
    return _GLOB_CHAR.sub(lambda m: f"[{m.group()}]", text)


def check_entry(entry: str) -> str:
    """Return ``entry`` cleaned up if it is a valid approval entry; raise RuleError if not."""
    if _EXACT.fullmatch(entry.strip()):
        if "\x00" in entry:
            raise RuleError(entry, "NUL byte in command")
        return entry.strip()
    return parse_rule(entry).text


@dataclass(frozen=True, slots=True, kw_only=True)
class CompiledApprovals:
    """Entries split into matcher rules and exact (tool, command) pairs."""

    rules: PermissionRules
    commands: frozenset[tuple[str, str]]


@functools.lru_cache(maxsize=256)
def compiled_approvals(entries: tuple[str, ...]) -> CompiledApprovals:
    """Return a store's entries split into rules and exact commands (cached: the policy
    asks at every decision, and a store's entries change only when an answer is kept).

    An entry that does not parse (a hand-edited file) is left out with a warning.
    """
    rules: list[Rule] = []
    commands: set[tuple[str, str]] = set()
    for entry in entries:
        if (exact := _EXACT.fullmatch(entry.strip())) is not None:
            commands.add((exact["tool"], exact["command"].strip()))
            continue
        try:
            rules.append(parse_rule(entry))
        except RuleError as exc:
            log.warning("ignoring a remembered approval: %s", exc)
    return CompiledApprovals(rules=PermissionRules(allow=tuple(dict.fromkeys(rules))),
                             commands=frozenset(commands))


class _MemoryApprovals:
    """Approval entries held in memory."""

    def __init__(self, initial: Iterable[str] = ()) -> None:
        self._entries: tuple[str, ...] = ()
        self._replace(tuple(initial))

    def entries(self) -> tuple[str, ...]:
        """Return the remembered entries, oldest first."""
        return self._entries

    def rules(self) -> PermissionRules:
        """Return the remembered allow rules (exact-command entries excluded)."""
        return compiled_approvals(self._entries).rules

    def commands(self) -> frozenset[tuple[str, str]]:
        """Return the exact (tool, command) pairs remembered."""
        return compiled_approvals(self._entries).commands

    def add(self, rule: str) -> bool:
        """Remember ``rule``; return False if it was already there. Raise RuleError if bad."""
        entry = check_entry(rule)
        if entry in self._entries:
            return False
        self._replace((*self._entries, entry))
        return True

    def clear(self) -> tuple[str, ...]:
        """Forget every entry; return what was forgotten."""
        old = self._entries
        self._replace(())
        return old

    def _replace(self, entries: tuple[str, ...]) -> None:
        self._entries = tuple(dict.fromkeys(entries))


class TurnApprovals(_MemoryApprovals):
    """A session's approvals for its current turn; the session clears them as a turn starts."""


class SessionApprovals(_MemoryApprovals):
    """Approvals for one session, seeded from its record and saved through ``on_change``.

    Args:
        initial: the record's approvals (``LiveSession.record.approvals``).
        on_change: called with the new entries after each change (``LiveSession.set_approvals``).
    """

    def __init__(self, initial: Iterable[str] = (),
                 on_change: Callable[[tuple[str, ...]], None] | None = None) -> None:
        super().__init__(initial)
        self._on_change = on_change

    def add(self, rule: str) -> bool:
        """Remember ``rule`` and save; return False if it was already there."""
        added = super().add(rule)
        if added and self._on_change is not None:
            self._on_change(self._entries)
        return added

    def clear(self) -> tuple[str, ...]:
        """Forget every entry and save; return what was forgotten."""
        old = super().clear()
        if old and self._on_change is not None:
            self._on_change(self._entries)
        return old


def agent_approvals_path(data_dir: Path, runtime_id: str) -> Path:
    """Return the agent store's file: ``<data_dir>/approvals/<safe id>-<hash>.json``.

    The hash keeps ids that sanitize alike (``agent:a:b``, ``agent:a-b``) apart.
    """
    safe = re.sub(r"[^A-Za-z0-9_.-]", "-", runtime_id).strip(".")[:80] or "agent"
    digest = hashlib.sha256(runtime_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return data_dir / "approvals" / f"{safe}-{digest}.json"


class AgentApprovalStore:
    """Approvals for one agent in a JSON file: they outlive sessions and /clear, with no expiry.

    The file is re-read when it changes on disk (another aimon may add to it) and replaced
    atomically on every change. A corrupt file counts as empty, with a warning (``problem``);
    the next change moves it aside to ``<name>.corrupt`` first.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._loaded = False
        self._entries: tuple[str, ...] = ()
        self._problem: str | None = None

    @property
    def problem(self) -> str | None:
        """Say why the file could not be read, or None when it is fine or absent."""
        self._refresh()
        return self._problem

    def entries(self) -> tuple[str, ...]:
        """Return the remembered entries, oldest first."""
        self._refresh()
        return self._entries

    def rules(self) -> PermissionRules:
        """Return the remembered allow rules (exact-command entries excluded)."""
        return compiled_approvals(self.entries()).rules

    def commands(self) -> frozenset[tuple[str, str]]:
        """Return the exact (tool, command) pairs remembered."""
        return compiled_approvals(self.entries()).commands

    def add(self, rule: str) -> bool:
        """Remember ``rule`` in the file; return False if it was already there."""
        entry = check_entry(rule)
        entries, problem = _read_entries(self.path)
        if entry in entries:
            self._reload()
            return False
        if problem is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.replace(self.path.with_name(self.path.name + ".corrupt"))
        payload = {"version": _FILE_VERSION, "rules": [*entries, entry]}
        _write_atomic(self.path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
        self._reload()
        return True

    def clear(self) -> tuple[str, ...]:
        """Forget every entry (delete the file); return what was forgotten."""
        entries, _ = _read_entries(self.path)
        self.path.unlink(missing_ok=True)
        self._reload()
        return entries

    def _reload(self) -> None:
        self._loaded = False
        self._refresh()

    def _refresh(self) -> None:
        try:
            info = self.path.stat()
        except FileNotFoundError:
            stamp = None
        except OSError as exc:
            self._set((), f"cannot read {str(self.path)!r}: {exc}")
            self._loaded = False
            return
        else:
            stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
        if self._loaded and stamp == self._stamp:
            return
        self._stamp, self._loaded = stamp, True
        self._set(*_read_entries(self.path) if stamp is not None else ((), None))

    def _set(self, entries: tuple[str, ...], problem: str | None) -> None:
        if problem is not None and problem != self._problem:
            log.warning("agent approvals: %s", problem)
        self._entries, self._problem = entries, problem


def _read_entries(path: Path) -> tuple[tuple[str, ...], str | None]:
    """Return the file's entries and a problem, if any; a missing file has none of either."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return (), None
    except (OSError, UnicodeDecodeError) as exc:
        return (), f"cannot read {str(path)!r}: {exc}; its approvals are ignored"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return (), f"{str(path)!r} is not valid JSON ({exc}); its approvals are ignored"
    rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, list):
        return (), f"{str(path)!r} has no \"rules\" list; its approvals are ignored"
    entries = tuple(r for r in rules if isinstance(r, str))
    if len(entries) != len(rules):
        return entries, f"{str(path)!r} holds rules that are not strings; they are ignored"
    return entries, None


def _write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``: write a temporary file, fsync it, rename it over."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode("utf-8"), mode=0o600)
