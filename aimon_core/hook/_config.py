"""The `hooks` section of a settings file (Claude Code's shape) and hook matchers."""

from __future__ import annotations

import fnmatch
import functools
import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aimon_core.hook._lifecycle import (
    UNSUPPORTED_CLAUDE_EVENTS,
    HookEvent,
    unknown_event_message,
)

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 60.0

# A matcher of only these characters is a list of exact names (`Edit|Write`), like Claude Code.
_PLAIN_MATCHER = re.compile(r"[A-Za-z0-9_|]+")


class HookConfigError(ValueError):
    """The hooks settings are malformed: `key` (a path like `hooks.PreToolUse[0]`) in `source`."""

    def __init__(self, source: str, key: str, reason: str) -> None:
        super().__init__(f"{source}: {key}: {reason}")
        self.source = source
        self.key = key
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandHookSpec:
    """One command hook from settings: run `command` on `event` when `matcher` matches.

    Args:
        matcher: None or "" or "*" matches everything (see `matcher_accepts`).
        timeout: seconds before the command's process group is killed.
        source: the settings file it came from, for messages.
    """

    event: HookEvent
    matcher: str | None
    command: str
    timeout: float = DEFAULT_TIMEOUT
    source: str = ""
    # Claude Code's `async`: run in the background; the turn does not wait for the answer.
    run_async: bool = False
    # Claude Code's `statusMessage`: shown to the user while the hook runs.
    status_message: str | None = None
    # Claude Code's `if`: a rule like `Bash(git *)` the tool call must match.
    condition: str | None = None


def _is_catch_all(matcher: str | None) -> bool:
    return matcher is None or matcher.strip() in ("", "*")


@functools.lru_cache(maxsize=256)
def _compiled(matcher: str) -> re.Pattern[str]:
    return re.compile(matcher)


def check_matcher(matcher: str | None) -> None:
    """Raise re.error if `matcher` is neither a catch-all, a name list nor a valid regex."""
    if not _is_catch_all(matcher) and matcher is not None and not _PLAIN_MATCHER.fullmatch(
        matcher
    ):
        _compiled(matcher)


def matcher_accepts(matcher: str | None, subject: str | None) -> bool:
    """Return True when `matcher` selects `subject` (a tool name, a session source...).

    Like Claude Code: None, "" and "*" match everything; letters, digits, `_` and `|` are
    exact names (`Edit|Write`); anything else is a regular expression searched in the
    subject (`Notebook.*`, `mcp__github__.*`). A None subject (the event has no matcher
    subject) matches every matcher. Matching is case-sensitive.
    """
    if _is_catch_all(matcher) or subject is None:
        return True
    assert matcher is not None
    if _PLAIN_MATCHER.fullmatch(matcher):
        return subject in matcher.split("|")
    try:
        return _compiled(matcher).search(subject) is not None
    except re.error:
        return False


_CONDITION = re.compile(r"\s*([A-Za-z0-9_*|.-]+)\s*(?:\((.*)\))?\s*", re.DOTALL)
# The tool input a condition's pattern is tested against, by tool (Claude Code's rule subjects).
_CONDITION_FIELDS = {"Bash": "command", "Read": "file_path", "Write": "file_path",
                     "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path",
                     "WebFetch": "url", "Glob": "pattern", "Grep": "pattern"}


def condition_accepts(condition: str | None, tool_name: str | None,
                      tool_input: Mapping[str, Any] | None) -> bool:
    """Return True when a hook's `if` rule (`Bash(git *)`, `Edit(*.ts)`, `Write`) holds.

    The tool name must match (a matcher-style name list or regex); the pattern in
    parentheses is a glob over the tool's subject (the Bash command, the file path).
    Conditions only narrow tool events: with no tool (a Stop hook) the hook runs.
    """
    if condition is None or tool_name is None:
        return True
    found = _CONDITION.fullmatch(condition)
    if found is None:
        return False
    name, pattern = found.group(1), found.group(2)
    if not matcher_accepts(name, tool_name):
        return False
    if pattern is None or pattern.strip() in ("", "*"):
        return True
    # Claude Code's legacy prefix form `git:*` means `git *`.
    pattern = pattern[:-2] + " *" if pattern.endswith(":*") else pattern
    value = (tool_input or {}).get(_CONDITION_FIELDS.get(tool_name, ""), "")
    subject = value if isinstance(value, str) else ""
    return fnmatch.fnmatchcase(subject, pattern) or (
        pattern.endswith(" *") and subject == pattern[:-2])


def parse_hooks_config(
    value: Mapping[str, Any], source: str = "settings.json"
) -> tuple[CommandHookSpec, ...]:
    """Return the command hooks of a settings object (its `hooks` key; absent means none).

    Raises HookConfigError for an unknown event (naming the nearest), a value of the wrong
    type, a missing command, a bad timeout, an invalid matcher or a hook type other than
    "command". Events Claude Code has and aimon does not are skipped with a warning.
    """
    if not isinstance(value, Mapping):
        raise HookConfigError(source, "(root)", f"expected an object, got {_kind(value)}")
    if "hooks" not in value or value["hooks"] is None:
        stray = [key for key in value if _event_or_none(str(key)) is not None]
        if stray:
            raise HookConfigError(
                source, str(stray[0]), "hook events belong under a top-level 'hooks' key"
            )
        return ()
    hooks = value["hooks"]
    if not isinstance(hooks, Mapping):
        raise HookConfigError(source, "hooks", f"expected an object, got {_kind(hooks)}")
    specs: list[CommandHookSpec] = []
    for name, groups in hooks.items():
        key = f"hooks.{name}"
        if not isinstance(name, str):
            raise HookConfigError(source, key, "an event name must be a string")
        if name in UNSUPPORTED_CLAUDE_EVENTS:
            log.warning("%s: %s: aimon has no %r hook event; these hooks are skipped",
                        source, key, name)
            continue
        event = _event_or_none(name)
        if event is None:
            raise HookConfigError(source, key, unknown_event_message(name))
        specs.extend(_parse_groups(event, groups, source, key))
    return tuple(specs)


def group_specs(name: str, matcher: str | None, commands: Iterable[HookCommand], *,
                source: str, key: str) -> tuple[CommandHookSpec, ...]:
    """Return the specs of one matcher group of event `name`, from typed settings values.

    Settings hand their validated hooks over this way (no JSON round trip). Raises
    HookConfigError for an unknown event, an invalid matcher, a hook type other than "command"
    or an empty command; events Claude Code has and aimon does not are skipped with a warning.
    """
    if name in UNSUPPORTED_CLAUDE_EVENTS:
        log.warning("%s: %s: aimon has no %r hook event; these hooks are skipped",
                    source, key, name)
        return ()
    event = _event_or_none(name)
    if event is None:
        raise HookConfigError(source, key, unknown_event_message(name))
    checked = _parse_matcher(matcher, source, f"{key}.matcher")
    specs = []
    for position, hook in enumerate(commands):
        where = f"{key}.hooks[{position}]"
        if hook.type != "command":
            raise HookConfigError(source, f"{where}.type", f"unknown hook type {hook.type!r}; "
                                  "only 'command' is supported")
        if not hook.command.strip():
            raise HookConfigError(source, f"{where}.command", "the command is empty")
        specs.append(CommandHookSpec(
            event=event, matcher=checked, command=hook.command, source=source,
            timeout=DEFAULT_TIMEOUT if hook.timeout is None else hook.timeout,
            run_async=hook.async_, status_message=hook.status_message,
            condition=hook.condition))
    return tuple(specs)


class HookCommand(Protocol):
    """A validated hook command as settings hold it."""

    @property
    def type(self) -> str:
        """Return the hook type ("command")."""
        ...

    @property
    def command(self) -> str:
        """Return the shell command."""
        ...

    @property
    def timeout(self) -> float | None:
        """Return the timeout in seconds, None for the default."""
        ...

    @property
    def async_(self) -> bool:
        """Return whether the hook runs in the background."""
        ...

    @property
    def status_message(self) -> str | None:
        """Return the text shown while the hook runs."""
        ...

    @property
    def condition(self) -> str | None:
        """Return the rule (`Bash(git *)`) a tool call must match, or None."""
        ...


def _event_or_none(name: str) -> HookEvent | None:
    try:
        return HookEvent.from_name(name)
    except ValueError:
        return None


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _parse_groups(
    event: HookEvent, groups: object, source: str, key: str
) -> list[CommandHookSpec]:
    if not isinstance(groups, list):
        raise HookConfigError(
            source, key, f"expected a list of {{matcher, hooks}} objects, got {_kind(groups)}"
        )
    specs: list[CommandHookSpec] = []
    for index, group in enumerate(groups):
        group_key = f"{key}[{index}]"
        if not isinstance(group, Mapping):
            raise HookConfigError(source, group_key, f"expected an object, got {_kind(group)}")
        matcher = _parse_matcher(group.get("matcher"), source, f"{group_key}.matcher")
        entries = group.get("hooks")
        if not isinstance(entries, list):
            raise HookConfigError(
                source, f"{group_key}.hooks", f"expected a list of hooks, got {_kind(entries)}"
            )
        for position, entry in enumerate(entries):
            specs.append(
                _parse_entry(event, matcher, entry, source, f"{group_key}.hooks[{position}]")
            )
    return specs


def _parse_matcher(matcher: object, source: str, key: str) -> str | None:
    if matcher is None:
        return None
    if not isinstance(matcher, str):
        raise HookConfigError(source, key, f"expected a string, got {_kind(matcher)}")
    try:
        check_matcher(matcher)
    except re.error as exc:
        raise HookConfigError(source, key, f"invalid regular expression {matcher!r}: {exc}"
                              ) from None
    return matcher


def _parse_entry(
    event: HookEvent, matcher: str | None, entry: object, source: str, key: str
) -> CommandHookSpec:
    if not isinstance(entry, Mapping):
        raise HookConfigError(source, key, f"expected an object, got {_kind(entry)}")
    kind = entry.get("type", "command")
    if kind != "command":
        raise HookConfigError(
            source, f"{key}.type", f"unknown hook type {kind!r}; only 'command' is supported"
        )
    command = entry.get("command")
    if not isinstance(command, str):
        reason = "missing" if command is None else f"expected a string, got {_kind(command)}"
        raise HookConfigError(source, f"{key}.command", f"{reason}: a command hook needs a "
                              "shell command to run")
    if not command.strip():
        raise HookConfigError(source, f"{key}.command", "the command is empty")
    run_async, status, condition = entry.get("async", False), entry.get("statusMessage"), \
        entry.get("if")
    if not isinstance(run_async, bool):
        raise HookConfigError(source, f"{key}.async", f"expected true or false, got "
                              f"{_kind(run_async)}")
    for name, value in (("statusMessage", status), ("if", condition)):
        if value is not None and not isinstance(value, str):
            raise HookConfigError(source, f"{key}.{name}", f"expected a string, got "
                                  f"{_kind(value)}")
    return CommandHookSpec(
        event=event,
        matcher=matcher,
        command=command,
        timeout=_parse_timeout(entry.get("timeout"), source, f"{key}.timeout"),
        source=source,
        run_async=run_async,
        status_message=status,
        condition=condition,
    )


def _parse_timeout(timeout: object, source: str, key: str) -> float:
    if timeout is None:
        return DEFAULT_TIMEOUT
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise HookConfigError(source, key, f"expected a number of seconds, got {_kind(timeout)}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise HookConfigError(source, key, f"must be a positive number of seconds, got {timeout}")
    return float(timeout)
