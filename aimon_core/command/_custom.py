"""Custom slash commands: Markdown prompts in `commands/` folders, as Claude Code has them.

`.aimon/commands/` and `.claude/commands/` (and the user's `commands/` folders of aimon and of
Claude Code) hold one command per `.md` file; a subfolder is a namespace
(`frontend/component.md` is `/frontend:component`). Optional YAML frontmatter gives
`description`, `argument-hint`, `allowed-tools` and `model`. The body becomes the turn's
prompt with `$ARGUMENTS` and `$1`... filled, `@path` replaced by the file's content and
`` !`command` `` by the command's output; a backslash before the `!` leaves the text
`` !`command` `` as it is.

Prompts are not code, so commands load without trust (RELIABILITY.md, point 10). A
`` !`command` `` is a Bash tool call made for the user: it passes the runtime's permission gate
as the model's would (deny rules, the mode, ask rules; a question where a person can answer,
a refusal in print mode) and runs as the Bash tool runs it (the model commands' environment,
its timeout, credentials redacted from the output). `allowed-tools` never widens permissions:
a file in a fresh clone could otherwise allow itself anything.

Command files and `@path` attachments are read as aimon reads any file by itself
(`aimon_core.filesystem.read_own`): a project file must not lead out of the project, only
regular files outside /proc, /sys and /dev are read, and the path deny rules apply. A file
refused is skipped with a note naming it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.command._registry import (
    NAME_PATTERN,
    CommandHost,
    CommandOutcome,
    SlashCommand,
)

if TYPE_CHECKING:
    from aimon_core.filesystem import Readable
    from aimon_core.live import LiveSession

COMMANDS_DIR = "commands"
_ARGUMENT = re.compile(r"\$(ARGUMENTS|[1-9])")
_BANG = re.compile(r"(\\?)!`([^`\n]+)`")
_AT_FILE = re.compile(r"(?<![\w@])@((?:\.{0,2}/)?[\w.\-/]+)")
_FILE_LIMIT = 256 * 1024
_COMMAND_LIMIT = 1024 * 1024
_BANG_TIMEOUT_MS = 30_000
_DESCRIPTION_LENGTH = 70


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomCommand:
    """One Markdown command file, read and checked."""

    name: str
    path: Path
    body: str
    description: str = ""
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    # What reading the file had to assume (YAML Claude Code accepts and PyYAML does not).
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CustomCommandError:
    """A command file that could not be read (it is skipped; the message says why)."""

    path: Path
    reason: str


def command_roots(project_root: Path, claude_user: Path) -> tuple[Path, ...]:
    """Return the command folders, the one that wins a name first.

    Args:
        claude_user: Claude Code's user folder (`aimon_core.config.claude_user_dir()`).
    """
    from aimon_core.session import user_config_dir

    root = project_root.absolute()
    return (root / ".aimon" / COMMANDS_DIR, root / ".claude" / COMMANDS_DIR,
            user_config_dir() / COMMANDS_DIR, claude_user / COMMANDS_DIR)


def load_custom_commands(roots: Sequence[Path], *, project_root: Path | None = None,
                         readable: Readable | None = None
                         ) -> tuple[tuple[CustomCommand, ...], tuple[CustomCommandError, ...]]:
    """Read every `*.md` under `roots`; a name found in an earlier root wins.

    Args:
        project_root: files of roots inside it must not lead out of it (None: no such check).
        readable: the path deny rules; a file they cover is skipped.
    """
    from aimon_core.filesystem import own_path

    found: dict[str, CustomCommand] = {}
    failures: list[CustomCommandError] = []
    for root in roots:
        inside = _project_of(root, project_root)
        try:
            if not root.is_dir():
                continue
            own_path(root, inside=inside)
        except OSError as exc:
            failures.append(CustomCommandError(path=root, reason=f"folder skipped: {exc}"))
            continue
        for path in _markdown_files(root):
            name = command_name(path.relative_to(root))
            if name in found:
                continue
            try:
                found[name] = parse_command(name, path, inside=inside, readable=readable)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                failures.append(CustomCommandError(path=path, reason=str(exc)))
    return tuple(found.values()), tuple(failures)


def _project_of(root: Path, project_root: Path | None) -> Path | None:
    """Return the project `root` belongs to (its files must stay inside), or None."""
    if project_root is None:
        return None
    project = project_root.absolute()
    return project if root.absolute().is_relative_to(project) else None


def _markdown_files(root: Path) -> list[Path]:
    # Links are kept (their target is checked when read); folders are not (rglob does not
    # enter linked ones).
    return sorted(p for p in root.rglob("*.md")
                  if not p.name.startswith(".") and (p.is_symlink() or not p.is_dir()))


def command_name(relative: Path) -> str:
    """Return the command name of a file path under a commands folder (`a/b.md` -> `a:b`)."""
    parts = [*relative.parent.parts, relative.stem]
    return ":".join(re.sub(r"[^a-z0-9_.-]+", "-", part.lower()).strip("-") for part in parts)


def parse_command(name: str, path: Path, *, inside: Path | None = None,
                  readable: Readable | None = None) -> CustomCommand:
    """Read one command file; ValueError when its name or frontmatter is unusable.

    OSError when it cannot be read, or may not be (`read_own`: it leads out of `inside`, is
    not a regular file, or `readable` refuses it).
    """
    from aimon_core.agent import read_frontmatter
    from aimon_core.filesystem import read_own

    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"{name!r} is not a usable command name")
    data = read_own(path, inside=inside, readable=readable, limit=_COMMAND_LIMIT)
    read = read_frontmatter(data.decode("utf-8"))  # NoFrontmatterError is a ValueError
    fields: dict[str, Any] = read.fields
    body = read.body
    description = _text(fields.get("description")) or _first_line(body)
    return CustomCommand(
        name=name, path=path, body=body, description=description,
        argument_hint=_text(fields.get("argument-hint")),
        allowed_tools=_tools(fields.get("allowed-tools")),
        model=_text(fields.get("model")) or None,
        warnings=tuple(f"frontmatter {w}" for w in read.warnings),
    )


def _text(value: object) -> str:
    if isinstance(value, list):
        return " ".join(str(item) for item in value)
    return "" if value is None else " ".join(str(value).split())


def _tools(value: object) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(item).strip() for item in value if str(item).strip())
    if isinstance(value, str):
        return tuple(part.strip() for part in re.split(r",(?![^(]*\))", value) if part.strip())
    return ()


def _first_line(body: str) -> str:
    line = next((line.strip("# ").strip() for line in body.splitlines() if line.strip()), "")
    return line if len(line) <= _DESCRIPTION_LENGTH else line[: _DESCRIPTION_LENGTH - 1] + "…"


def slash_command(command: CustomCommand, project_root: Path, origin: str) -> SlashCommand:
    """Return the slash command that expands `command` into the turn's prompt."""

    async def run(args: str, host: CommandHost) -> CommandOutcome:
        readable = None
        if host.policy is not None:
            from aimon_core.permission import read_filter

            policy = host.policy
            readable = read_filter(lambda: policy.rules, project_root)
        prompt, notes = await expand(command, args, project_root, host.live, readable=readable)
        return CommandOutcome.submit(prompt, text="\n".join(notes))

    hint = f" {command.argument_hint}" if command.argument_hint else ""
    return SlashCommand(name=command.name, description=command.description or command.name,
                        run=run, usage=f"/{command.name}{hint}", origin=origin)


def fill_arguments(body: str, args: str) -> str:
    """Fill `$ARGUMENTS` (the whole string) and `$1`...`$9` (shell-split words)."""
    from aimon_core.skill import split_arguments

    words = split_arguments(args)

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return args
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    filled = _ARGUMENT.sub(fill, body)
    if args.strip() and not _ARGUMENT.search(body):
        filled = f"{filled.rstrip()}\n\nARGUMENTS: {args}"  # as Claude Code does
    return filled


async def expand(command: CustomCommand, args: str, project_root: Path,
                 live: LiveSession | None, *, readable: Readable | None = None
                 ) -> tuple[str, list[str]]:
    """Return the prompt of `/name args` and notes for the user (commands not run...).

    Args:
        live: the session whose runtime gates and runs `` !`command` `` lines (None: they are
            not run).
        readable: the path deny rules; an `@path` they cover is not attached.
    """
    notes: list[str] = []
    text = fill_arguments(command.body, args)
    # `\!`cmd`` is the text !`cmd`, never run (as in Claude Code).
    outputs = [f"!`{found.group(2)}`" if found.group(1) else
               await _bang(found.group(2), live, notes) for found in _BANG.finditer(text)]
    pieces = iter(outputs)
    text = _BANG.sub(lambda _: next(pieces), text)
    return _attach_files(text, project_root, notes, readable), notes


async def _bang(shell_command: str, live: LiveSession | None, notes: list[str]) -> str:
    """Run one `` !`command` `` as a Bash tool call the user made; return what replaces it."""
    from aimon_core.tools import execute_tool

    bash = live.runtime.tools.get("Bash") if live is not None else None
    if live is None or bash is None:
        refusal = "no session and Bash tool to run it with"
    else:
        tool_input = {"command": shell_command, "timeout": _BANG_TIMEOUT_MS}
        context = replace(live.tool_context, turn=live.command_turn())
        verdict = await live.runtime.gate(bash, tool_input, context)
        if verdict.allowed:
            result = await execute_tool(bash, tool_input, context)
            return result.text
        refusal = verdict.message or "the permission rules refused it"
    notes.append(f"not run: !`{shell_command}` ({refusal})")
    return f"(the command `{shell_command}` was not run: {refusal})"


def _attach_files(text: str, project_root: Path, notes: list[str],
                  readable: Readable | None = None) -> str:
    """Append the content of each `@path` that names a file inside the project."""
    from aimon_core.filesystem import RefusedFileError, read_own

    attached: list[str] = []
    root = project_root.absolute()
    for raw in dict.fromkeys(found.group(1).rstrip(".") for found in _AT_FILE.finditer(text)):
        path = root / raw
        if not os.path.lexists(path) or (path.is_dir() and not path.is_symlink()):
            continue
        try:
            data = read_own(path, inside=root, readable=readable, limit=_FILE_LIMIT + 1)
        except RefusedFileError as exc:
            notes.append(f"@{raw}: not attached: {exc}")
            continue
        except OSError as exc:
            notes.append(f"@{raw}: cannot read: {exc.strerror or exc}")
            continue
        if b"\0" in data or len(data) > _FILE_LIMIT:
            notes.append(f"@{raw}: not attached (binary, or larger than 256 KB)")
            continue
        attached.append(f"Contents of {raw}:\n```\n{data.decode('utf-8', 'replace')}\n```")
    return text if not attached else "\n\n".join((text.rstrip(), *attached))


def custom_commands(project_root: Path, taken: Iterable[str], *, claude_user: Path,
                    readable: Readable | None = None, replaceable: Iterable[str] = ()
                    ) -> tuple[tuple[SlashCommand, ...], tuple[str, ...]]:
    """Return the slash commands of every commands folder and notes on the ones skipped.

    Names in `taken` (system and skill commands) win, and a file naming one is reported,
    except names in `replaceable` (aimon's built-in skills): as in Claude Code, the project's
    own `/commit` replaces a built-in one. A file of the project that leads out of it, or that
    `readable` (the deny rules) refuses, is skipped with a note.
    """
    roots = command_roots(project_root, claude_user)
    commands, failures = load_custom_commands(roots, project_root=project_root,
                                              readable=readable)
    busy = set(taken) - set(replaceable)
    notes = [f"{failure.path}: command skipped: {failure.reason}" for failure in failures]
    result: list[SlashCommand] = []
    for command in commands:
        notes.extend(f"{command.path}: {warning}" for warning in command.warnings)
        if command.name in busy:
            notes.append(f"{command.path}: not used: /{command.name} is already a command of "
                         "aimon or of a skill (rename the file to use it)")
            continue
        origin = next((f"command {root.parent.name}" for root in roots
                       if command.path.is_relative_to(root)), "command")
        result.append(slash_command(command, project_root, origin))
    return tuple(result), tuple(notes)
