"""Reading print mode's prompt from the argument and piped stdin (no aimon imports: a warm
`aimon -p` reads it before it knows whether the service will run the turn)."""

from __future__ import annotations

from typing import TextIO


def read_prompt(prompt: str | None, stdin: TextIO) -> str:
    """Return the prompt from the argument, or from stdin when it is piped."""
    if prompt and prompt != "-":
        piped = "" if stdin.isatty() else _read_available(stdin)
        return f"{prompt}\n\n{piped}".strip() if piped.strip() else prompt
    if stdin.isatty():
        return ""
    return stdin.read().strip()


def _read_available(stdin: TextIO) -> str:
    """Read piped stdin if something is there; never block on an idle pipe."""
    import select

    try:
        ready, _, _ = select.select([stdin], [], [], 0)
    except (OSError, ValueError):
        return ""
    return stdin.read() if ready else ""
