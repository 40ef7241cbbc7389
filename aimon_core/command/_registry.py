"""Slash commands: the command value, the host a UI provides, parsing and the registry."""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from aimon_core.config import LoadedSettings
    from aimon_core.live import LiveSession
    from aimon_core.llm import Usage
    from aimon_core.permission import ApprovalAnswer, ApprovalRequest, PermissionPolicy
    from aimon_core.session import SessionSummary

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.:-]*")
# What `CommandHost.choose` returns when the person cancelled the choice (Esc, Ctrl-C).
CANCELLED = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandOutcome:
    """What a command produced: text to show (plain or Markdown), an error, or a prompt to run.

    `prompt` is for commands that expand into a request to the model (skill-backed commands):
    the UI runs it as a turn, the same way as typed text. `draft` is text for the person to
    finish in the input box (`/task explore ` once a picker chose the agent). `usage` and
    `cost_usd` are what the command spent on the model (a subagent it ran), None: nothing.
    """

    text: str = ""
    markdown: bool = False
    is_error: bool = False
    prompt: str | None = None
    draft: str | None = None
    usage: Usage | None = None
    cost_usd: float = 0.0

    @classmethod
    def message(cls, text: str, *, markdown: bool = False) -> CommandOutcome:
        """Return an outcome that shows `text`."""
        return cls(text=text, markdown=markdown)

    @classmethod
    def error(cls, text: str) -> CommandOutcome:
        """Return an outcome that shows `text` as an error."""
        return cls(text=text, is_error=True)

    @classmethod
    def submit(cls, prompt: str, *, text: str = "") -> CommandOutcome:
        """Return an outcome that runs `prompt` as a turn."""
        return cls(text=text, prompt=prompt)


class CommandError(Exception):
    """A command cannot run with the arguments it got; the message says how to fix that."""


class CommandNameError(ValueError):
    """A command name is malformed, or is taken by a system command."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"cannot register command /{name}: {reason}")
        self.name = name


class CommandHost(Protocol):
    """What a UI offers to slash commands. The core never prompts: hosts do the I/O."""

    @property
    def live(self) -> LiveSession | None:
        """Return the current LiveSession, or None while it is still opening."""
        ...

    @property
    def commands(self) -> CommandRegistry:
        """Return the registry the command was found in."""
        ...

    async def live_session(self) -> LiveSession:
        """Return the current LiveSession, waiting for it to open."""
        ...

    async def new_session(self) -> LiveSession:
        """Close the current session (it stays stored) and open a new one."""
        ...

    async def resume(self, session_id: str) -> LiveSession:
        """Open a stored session in place of the current one; the current one stays stored.

        Raises the session store's errors (not found, locked, another agent's).
        """
        ...

    async def list_sessions(self, limit: int) -> tuple[SessionSummary, ...]:
        """Return the project's most recent sessions, newest first."""
        ...

    def request_exit(self) -> None:
        """Leave the UI after this command (the session is closed and stays resumable)."""
        ...

    @property
    def policy(self) -> PermissionPolicy | None:
        """Return the permission policy of the runtime, or None (not built yet, or none)."""
        ...

    @property
    def settings(self) -> LoadedSettings | None:
        """Return the settings the runtime uses now (reloads included), or None."""
        ...

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]:
        """Return the tool calls waiting for the user's approval, oldest first."""
        ...

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a waiting approval; False if none with that id waits."""
        ...

    async def confirm(self, question: str, details: str) -> bool:
        """Show `details` (a diff), ask `question`; True to go ahead.

        Hosts with no one to ask (print mode) return True: typing the command was the yes.
        """
        ...

    async def choose(self, question: str, options: tuple[tuple[str, str], ...],
                     details: str) -> str | None:
        """Show `details`, offer `options` as (key, label); return the key chosen.

        A key of one character is also its shortcut. `CANCELLED` when the person cancelled;
        None when no one can be asked (the command then needs arguments).
        """
        ...


CommandRun = Callable[[str, CommandHost], Awaitable[CommandOutcome]]
# The values a command's first argument takes, as (value, what it is), given the current
# session (None: none open yet): for completion and pickers. May block (it may list stored
# sessions): call it off the event loop.
ArgumentChoices = Callable[["LiveSession | None"], tuple[tuple[str, str], ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class SlashCommand:
    """A command typed as `/name args`: what it does, how to call it, and the function."""

    name: str
    description: str
    run: CommandRun
    usage: str = ""
    aliases: tuple[str, ...] = ()
    # Where a custom command comes from ("skill review", "project"); empty for system ones.
    origin: str = ""
    # Whether it changes what tools may do (/approve, /mode, /revoke ...): "did you mean"
    # offers such a command only for a near-exact typo of its name (see `near_exact`).
    changes_permissions: bool = False
    # The values its first argument takes (None: free text, or no argument).
    choices: ArgumentChoices | None = None

    @property
    def synopsis(self) -> str:
        """Return the usage, or `/name` when the command takes no arguments."""
        return self.usage or f"/{self.name}"


def parse_slash(text: str) -> tuple[str, str] | None:
    """Split `/name args` into ("name", "args"); None when the text is not a command.

    A first word that holds another slash is a path (`/usr/bin/env is broken`): a prompt.
    """
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    parts = stripped[1:].split(maxsplit=1)
    name = parts[0] if parts else ""
    if "/" in name:
        return None
    return name.lower(), parts[1].strip() if len(parts) > 1 else ""


MIN_PREFIX = 3
MIN_SLIP_LENGTH = 5


def near_exact(typed: str, name: str) -> bool:
    """Tell whether `typed` is a near-exact typo of `name` (how permission commands are offered).

    Near-exact: a prefix of `name` of at least MIN_PREFIX letters (`/rev` → `/revoke`), or, for
    a name of MIN_SLIP_LENGTH letters or more, one slip: two neighbouring letters swapped, one
    letter wrong, missing or extra (`/trsut`, `/revike`, `/revoe`, `/revokee` → ...).
    """
    if typed == name:
        return False
    if len(typed) >= MIN_PREFIX and name.startswith(typed):
        return True
    return len(name) >= MIN_SLIP_LENGTH and _one_slip(typed, name)


def _one_slip(a: str, b: str) -> bool:
    """Tell whether `a` and `b` differ by one swap of neighbours, substitution or indel."""
    if abs(len(a) - len(b)) > 1:
        return False
    start = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                 min(len(a), len(b)))
    if len(a) == len(b):
        swapped = a[start + 1 : start + 2] + a[start : start + 1] + a[start + 2 :]
        return a[start + 1 :] == b[start + 1 :] or swapped == b[start:]
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return longer[start + 1 :] == shorter[start:]


class CommandRegistry:
    """System commands and custom ones (registered later, e.g. by skills).

    Lookup is layered: a system command or alias always wins, and a custom command cannot
    take a system name. A custom command registered again under the same name replaces the
    earlier one.
    """

    def __init__(self, system: Iterable[SlashCommand] = ()) -> None:
        self._system: dict[str, SlashCommand] = {}
        self._custom: dict[str, SlashCommand] = {}
        self._aliases: dict[str, str] = {}
        for command in system:
            self._check_name(command)
            self._system[command.name] = command
            for alias in command.aliases:
                self._aliases[alias] = command.name

    def register(self, command: SlashCommand, *, system: bool = False) -> None:
        """Add a custom command; raise CommandNameError if its name is a system command's.

        `system`: a command of aimon's own that its host adds later (the REPL's `/bg`):
        listed with the system commands, and kept when the custom ones are read again.
        """
        self._check_name(command)
        if command.aliases:
            raise CommandNameError(command.name, "custom commands cannot have aliases")
        (self._system if system else self._custom)[command.name] = command

    def unregister(self, name: str) -> bool:
        """Remove a custom command; return whether there was one."""
        return self._custom.pop(name, None) is not None

    def get(self, name: str) -> SlashCommand | None:
        """Return the command called `name` (or aliased so), system commands first."""
        key = name.lower()
        key = self._aliases.get(key, key)
        return self._system.get(key) or self._custom.get(key)

    def is_system(self, name: str) -> bool:
        """Return whether `name` is a system command or alias."""
        key = name.lower()
        return key in self._system or key in self._aliases

    def system(self) -> tuple[SlashCommand, ...]:
        """Return the system commands, in registration order."""
        return tuple(self._system.values())

    def custom(self) -> tuple[SlashCommand, ...]:
        """Return the custom commands, by name."""
        return tuple(self._custom[name] for name in sorted(self._custom))

    def names(self) -> tuple[str, ...]:
        """Return every name that can be typed (aliases too), sorted."""
        return tuple(sorted({*self._system, *self._aliases, *self._custom}))

    def suggest(self, name: str) -> str | None:
        """Return the command name nearest to a mistyped `name`, if one is close.

        A unique prefix wins, then difflib's closest name. A command that changes permissions
        is offered only for a near-exact typo (`near_exact`): `/review` must never lead to
        `/revoke`.
        """
        key = name.lower()
        if not key:
            return None
        names = self.names()
        guarded = {n for n in names if self._changes_permissions(n)}
        near = [n for n in sorted(guarded) if near_exact(key, n)]
        starting = [n for n in names if n.startswith(key) and (n not in guarded or n in near)]
        if len(starting) == 1:
            return self._aliases.get(starting[0], starting[0])
        if len(near) == 1:
            return near[0]
        ordinary = [n for n in names if n not in guarded]
        close = difflib.get_close_matches(key, ordinary, n=1, cutoff=0.6)
        return self._aliases.get(close[0], close[0]) if close else None

    def _changes_permissions(self, name: str) -> bool:
        command = self.get(name)
        return command is not None and command.changes_permissions

    async def run(self, text: str, host: CommandHost) -> CommandOutcome:
        """Run the command in `text`; unknown names and bad arguments become error outcomes."""
        parsed = parse_slash(text)
        if parsed is None:
            return CommandOutcome.error(f"Not a command: {text.strip()!r}")
        name, args = parsed
        command = self.get(name)
        if command is None:
            return CommandOutcome.error(self.unknown_message(name))
        try:
            return await command.run(args, host)
        except CommandError as exc:
            hint = f"\nUsage: {command.usage}" if command.usage else ""
            return CommandOutcome.error(f"{exc}{hint}")

    def unknown_message(self, name: str) -> str:
        """Return the message for a command that does not exist."""
        nearest = self.suggest(name)
        shown = f"/{name}" if name else "/"
        if nearest is not None:
            return f"Unknown command {shown}. Did you mean /{nearest}?"
        return f"Unknown command {shown}. Type /help to see the commands."

    def _check_name(self, command: SlashCommand) -> None:
        for name in (command.name, *command.aliases):
            if not NAME_PATTERN.fullmatch(name):
                raise CommandNameError(
                    name, "use lowercase letters, digits and - _ . : (starting with a letter "
                    "or digit)")
            if self.is_system(name):
                raise CommandNameError(name, "a system command has that name")


# A picker's rows past the ninth have no shortcut key: only the arrows reach them.
_SHORTCUTS = 9


async def pick(host: CommandHost, question: str, choices: tuple[tuple[str, str], ...],
               current: str | None = None) -> str | None:
    """Offer `choices` (value, what it is) in a picker; return the value chosen.

    `CANCELLED` when the person cancelled, None when nobody can be asked (print mode: the
    command says what it takes instead). `current` is marked.
    """
    if not choices:
        return None
    width = max(len(value) for value, _ in choices)
    options = tuple(
        (str(number) if number <= _SHORTCUTS else f"#{number}",
         f"{value:<{width}}  {what}{'  (current)' if value == current else ''}".rstrip())
        for number, (value, what) in enumerate(choices, 1))
    key = await host.choose(question, options, "")
    if key is None or key == CANCELLED:
        return key
    return next((value for (k, _), (value, _) in zip(options, choices, strict=True)
                 if k == key), CANCELLED)
