"""The shell tools: Bash, and BashOutput and KillShell for background jobs."""

from __future__ import annotations

import re

from aimon_core.shell import BackgroundOutput, ShellResult, UnknownShellError, cap_text
from aimon_core.tools._base import CommandSubject, Tool, ToolContext, ToolInput, ToolResult
from aimon_core.tools._detail import CommandRun

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000

BASH_DESCRIPTION = f"""\
Run a bash command and return its output (stdout, then stderr) and exit code.

- Each call runs in a new bash process started in the working directory: `cd`, variables \
and aliases do not carry over to the next call. Use absolute paths, or chain commands with \
`&&` (e.g. `cd sub && make`).
- stdin is closed and there is no terminal: interactive programs (editors, pagers, \
prompts) fail or wait until the timeout. Pass non-interactive flags (`-y`, `--no-edit`).
- timeout is in milliseconds: default {DEFAULT_TIMEOUT_MS} (2 minutes), at most \
{MAX_TIMEOUT_MS} (10 minutes). On timeout the command and every process it started are \
killed.
- Output longer than {MAX_OUTPUT_CHARS} characters is cut in the middle. For large \
output, write it to a file and Grep or Read it, or pipe through `head`/`tail`.
- run_in_background: true starts the command and returns a shell id at once; read its \
output later with BashOutput and stop it with KillShell. Use it for servers, watchers and \
other long-running processes. Processes that a foreground command leaves running while \
still attached to its output are stopped when the command ends.
- Prefer the dedicated tools: Read (not cat/head/tail), Grep (not grep/rg), Glob (not \
find/ls to search), Edit and Write (not sed/awk/echo >).
- description: a short summary of what the command does (5-10 words), shown to the user.
- When the OS sandbox is on, commands run inside it: they may write only in the project and \
$TMPDIR, and reach the network only through a proxy for allowed domains. If a command fails \
because of the sandbox (its result says so), you may run it again with \
dangerouslyDisableSandbox: true; the user is always asked first."""

BASH_SCHEMA = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "The bash command to run."},
        "timeout": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TIMEOUT_MS,
            "description": f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, "
            f"max {MAX_TIMEOUT_MS}).",
        },
        "description": {
            "type": "string",
            "description": "What the command does, in 5-10 words (e.g. 'Run the unit tests').",
        },
        "run_in_background": {
            "type": "boolean",
            "description": "Start the command in the background; read it with BashOutput.",
        },
        "dangerouslyDisableSandbox": {
            "type": "boolean",
            "description": "Run outside the OS sandbox (asks the user); only after a failure "
            "the sandbox caused.",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:g} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if rest else f"{minutes} min"


def format_shell_result(result: ShellResult, timeout_ms: int) -> tuple[str, bool]:
    """Return the text the model sees for a finished command, and whether it failed."""
    parts = [s.rstrip("\n") for s in (result.stdout, result.stderr) if s.strip()]
    body = cap_text("\n".join(parts), MAX_OUTPUT_CHARS) if parts else "(no output)"
    code = result.exit_code
    if result.timed_out:
        return (
            f"{body}\n\nCommand timed out after {_duration(timeout_ms)} and was killed, with "
            "every process it started. Run long commands with run_in_background, or raise "
            "timeout.",
            True,
        )
    if result.interrupted and code is not None:
        return f"{body}\n\nCommand was killed by signal {-code}.", True
    if code:
        return f"{body}\n\nExit code {code}", True
    return body, False


async def run_bash(inp: ToolInput, ctx: ToolContext) -> ToolResult:
    """Run the Bash tool."""
    command = inp.string("command")
    timeout_ms = min(max(inp.integer("timeout") or DEFAULT_TIMEOUT_MS, 1), MAX_TIMEOUT_MS)
    description = inp.opt_string("description") or ""
    inside = not inp.boolean("dangerouslyDisableSandbox")
    try:
        if inp.boolean("run_in_background"):
            shell_id = await ctx.shell.start_background(command, cwd=ctx.cwd, sandbox=inside)
            return ToolResult.ok(
                f"Started background shell {shell_id!r}. Read its output with BashOutput "
                f"(bash_id={shell_id!r}); stop it with KillShell (shell_id={shell_id!r}).",
                shell_id=shell_id,
                command=command,
                description=description,
            )
        result = await ctx.shell.run(command, cwd=ctx.cwd, timeout=timeout_ms / 1000,
                                     sandbox=inside, on_output=ctx.on_output)
    except OSError as exc:
        return ToolResult.error(f"Could not start bash in {str(ctx.cwd)!r}: {exc.strerror or exc}")
    text, failed = format_shell_result(result, timeout_ms)
    data = {
        "command": command,
        "description": description,
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        # Separate streams for hooks (Claude Code's Bash tool_response), capped like the text.
        "stdout": cap_text(result.stdout, MAX_OUTPUT_CHARS),
        "stderr": cap_text(result.stderr, MAX_OUTPUT_CHARS),
        "interrupted": result.interrupted or result.timed_out,
    }
    detail = CommandRun(command=command, exit_code=result.exit_code, timed_out=result.timed_out,
                        interrupted=result.interrupted or result.timed_out)
    if failed:
        return ToolResult(content=ToolResult.ok(text).content, is_error=True, data=data,
                          detail=detail)
    return ToolResult.ok(text, detail=detail, **data)


BASH_TOOL = Tool(
    name="Bash",
    description=BASH_DESCRIPTION,
    input_schema=BASH_SCHEMA,
    run=run_bash,
    subject=CommandSubject(param="command"),
)

# ---------------------------------------------------------------------------- background

BASH_OUTPUT_DESCRIPTION = """\
Read the output of a background shell started with Bash (run_in_background: true).

- Returns only the output produced since the previous BashOutput call for this shell, \
with the shell's status (running, completed, failed or killed) and exit code.
- filter: an optional regular expression (Python syntax); only matching lines are \
returned, and the other lines of this read are discarded.
- Poll again later if the shell is still running."""

BASH_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "bash_id": {"type": "string", "description": "The shell id Bash returned."},
        "filter": {"type": "string", "description": "Only return lines matching this regex."},
    },
    "required": ["bash_id"],
    "additionalProperties": False,
}


def _filtered(text: str, pattern: re.Pattern[str] | None) -> str:
    if pattern is None:
        return text
    return "\n".join(line for line in text.splitlines() if pattern.search(line))


def format_background(out: BackgroundOutput, pattern: re.Pattern[str] | None = None) -> str:
    """Return the text the model sees for a background shell's new output."""
    status: str = out.status
    if out.exit_code is not None and status != "running":
        status += f" (exit code {out.exit_code})"
    lines = [f"Shell {out.shell_id!r}: {status}"]
    stdout, stderr = _filtered(out.stdout, pattern), _filtered(out.stderr, pattern)
    if stdout.strip():
        lines.append(f"<stdout>\n{cap_text(stdout.rstrip(), MAX_OUTPUT_CHARS)}\n</stdout>")
    if stderr.strip():
        lines.append(f"<stderr>\n{cap_text(stderr.rstrip(), MAX_OUTPUT_CHARS)}\n</stderr>")
    if len(lines) == 1:
        lines.append("(no new output)")
    return "\n".join(lines)


def _unknown(exc: UnknownShellError) -> ToolResult:
    return ToolResult.error(
        f"There is no background shell {exc.shell_id!r}. Use the id that Bash returned "
        "when it started the command with run_in_background."
    )


async def bash_output(inp: ToolInput, ctx: ToolContext) -> ToolResult:
    """Run the BashOutput tool."""
    shell_id = inp.string("bash_id")
    pattern = None
    if (text := inp.opt_string("filter")) is not None:
        try:
            pattern = re.compile(text)
        except re.error as exc:
            return ToolResult.error(f"filter is not a valid regular expression: {exc}")
    try:
        out = await ctx.shell.read_background(shell_id)
    except UnknownShellError as exc:
        return _unknown(exc)
    return ToolResult.ok(
        format_background(out, pattern),
        shell_id=shell_id,
        status=out.status,
        exit_code=out.exit_code,
    )


BASH_OUTPUT_TOOL = Tool(
    name="BashOutput",
    description=BASH_OUTPUT_DESCRIPTION,
    input_schema=BASH_OUTPUT_SCHEMA,
    run=bash_output,
    read_only=True,
)

KILL_SHELL_DESCRIPTION = """\
Stop a background shell started with Bash (run_in_background: true), together with \
every process it started, and return its last output. shell_id is the id Bash returned."""

KILL_SHELL_SCHEMA = {
    "type": "object",
    "properties": {
        "shell_id": {"type": "string", "description": "The shell id Bash returned."},
    },
    "required": ["shell_id"],
    "additionalProperties": False,
}


async def kill_shell(inp: ToolInput, ctx: ToolContext) -> ToolResult:
    """Run the KillShell tool."""
    shell_id = inp.string("shell_id")
    try:
        out = await ctx.shell.kill_background(shell_id)
    except UnknownShellError as exc:
        return _unknown(exc)
    return ToolResult.ok(format_background(out), shell_id=shell_id, status=out.status)


KILL_SHELL_TOOL = Tool(
    name="KillShell",
    description=KILL_SHELL_DESCRIPTION,
    input_schema=KILL_SHELL_SCHEMA,
    run=kill_shell,
)
