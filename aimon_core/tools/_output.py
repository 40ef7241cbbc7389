"""A running tool call's output as it comes: whole lines, redacted, the last ones kept."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from aimon_core.shell import SecretPairs, redact

# The lines an interrupted call keeps for its result (what the model is told it printed).
KEPT_LINES = 20
# A line longer than this is passed on in pieces (a progress bar that never ends its line).
LONG_LINE = 4_000


class LiveOutput:
    """Passes a command's output on line by line, each redacted of `secrets`.

    Whole lines only: a credential split across two reads of the pipe would pass
    `redact` in halves. `flush` passes the unfinished last line on (the command ended).
    `tail` is what was passed on last, for an interrupted call's result.
    """

    def __init__(self, secrets: SecretPairs, tell: Callable[[str], None]) -> None:
        self._secrets = secrets
        self._tell = tell
        self._partial = ""
        self._kept: deque[str] = deque(maxlen=KEPT_LINES)

    def __call__(self, text: str) -> None:
        """Take a piece of output; pass on the lines it completes."""
        text = self._partial + text.replace("\r\n", "\n")
        cut = text.rfind("\n") + 1
        if cut == 0 and len(text) > LONG_LINE:
            cut = len(text)
        self._partial = text[cut:]
        if cut:
            self._pass(text[:cut])

    def flush(self) -> None:
        """Pass on what is left of the last line."""
        rest, self._partial = self._partial, ""
        if rest:
            self._pass(rest + "\n")

    @property
    def tail(self) -> str:
        """Return the last lines passed on (redacted), oldest first."""
        return "\n".join(self._kept)

    def _pass(self, lines: str) -> None:
        shown = redact(lines, self._secrets)
        # A carriage return rewrites its line (a progress bar): only the last state counts.
        self._kept.extend(line.rsplit("\r", 1)[-1] for line in shown.splitlines())
        self._tell(shown)
