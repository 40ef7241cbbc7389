"""The first prompt, drawn before the line editor has loaded; what is typed meanwhile is kept.

Python, asyncio and prompt-toolkit take a quarter of a second to import. Rather than leave the
terminal blank (and echo keys into it) for that long, `paint` draws the banner and the prompt
glyph at once and puts the terminal in raw mode as prompt-toolkit does (but for Ctrl-C): keys
are not echoed or translated, they wait in the terminal's input queue. When the REPL starts, it
clears the glyph's line and prompt-toolkit draws the prompt in the same place; its raw mode
takes the terminal over as it is (`hand_over` gives it the mode to restore afterwards) and it
reads the waiting keys as if they had been typed at its prompt (Enter, Ctrl-D and pastes
included; Ctrl-C before the editor runs stops aimon, as it would without an early prompt).
If aimon leaves first, `give_back` restores the terminal.

Before any of that, `provider_problem` tells whether a model provider can be used at all, from
the flags and the environment alone (a key or a base URL set): with none, aimon says what to
set and exits instead of drawing a prompt that could never be answered.

This module imports nothing that is not already loaded but `termios`: it runs on the
critical path (the provider check imports more only when it is about to fail).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_BRACKETED_PASTE_ON, _BRACKETED_PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
# The space prompt-toolkit reserves under the prompt for the completion menu
# (`reserve_space_for_menu` in repl.py): reserved here too, so nothing moves at the handover.
_MENU_ROWS = 4


def banner_text(version: str, project_root: str, width: int = 0) -> str:
    """Return the line shown above the first prompt; on a screen `width` columns wide too
    narrow for it, one line a part, so that the terminal never breaks it mid-word."""
    lines: list[str] = []
    for part in (f"aimon {version}", project_root, "/help for commands"):
        if lines and (not width or len(lines[-1]) + 3 + len(part) <= width):
            lines[-1] += f" · {part}"
        else:
            lines.append(part)
    return "\n".join(lines)


def screen_width(stdout: int = 1) -> int:
    """Return the terminal's width in columns (0 when it cannot tell)."""
    try:
        return os.get_terminal_size(stdout).columns
    except OSError:
        return 0


class EarlyPrompt:
    """The banner and prompt glyph on screen, the terminal in raw mode until it is handed
    over to the line editor (`hand_over`) or given back (`give_back`)."""

    def __init__(self, saved_mode: list[Any], stdin: int, stdout: int) -> None:
        self._saved_mode: list[Any] | None = saved_mode
        self._stdin, self._stdout = stdin, stdout
        self._cleared = False

    @classmethod
    def paint(cls, banner: str, *, stdin: int = 0, stdout: int = 1) -> EarlyPrompt | None:
        """Draw `banner` and the prompt glyph; None if stdin or stdout is not a terminal."""
        if not (os.isatty(stdin) and os.isatty(stdout)) or os.environ.get("TERM") == "dumb":
            return None
        try:
            import termios
        except ImportError:  # not a POSIX system: the prompt comes when the editor is ready
            return None
        try:
            saved = termios.tcgetattr(stdin)
            raw = [*saved[:6], list(saved[6])]
            # As prompt-toolkit's raw_mode: no echo, no line editing, Enter arrives as \r.
            # Unlike it, Ctrl-C still sends SIGINT: until the editor runs, nothing would read
            # it as a key, so it stops aimon's start (prompt-toolkit's raw mode turns it off).
            raw[0] &= ~(termios.IXON | termios.IXOFF | termios.ICRNL | termios.INLCR
                        | termios.IGNCR)
            raw[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN)
            raw[6][termios.VMIN] = 1
            termios.tcsetattr(stdin, termios.TCSANOW, raw)
        except (OSError, termios.error):
            return None
        early = cls(saved, stdin, stdout)
        reserve = "\r\n" * (_MENU_ROWS - 1) + f"\x1b[{_MENU_ROWS - 1}A"
        lines = "\r\n".join(_grey(line) for line in banner.splitlines())
        early._write(f"{lines}\r\n{reserve}{_BRACKETED_PASTE_ON}\x1b[0;1m›\x1b[0m ")
        return early

    def clear_line(self) -> None:
        """Clear the glyph's line (once): the line editor draws its prompt there."""
        if not self._cleared:
            self._cleared = True
            self._write("\r\x1b[K")

    def hand_over(self) -> list[Any] | None:
        """Return the terminal mode from before `paint` for the line editor to restore when
        its own raw mode ends; None if the terminal was given back already.

        The terminal stays in raw mode: the keys typed so far, and any typed until the editor
        reads them, stay queued exactly as typed (a moment of cooked mode between here and
        the editor's raw mode would echo them and turn Enter into a newline).
        """
        saved, self._saved_mode = self._saved_mode, None
        return saved

    def give_back(self) -> None:
        """Restore the terminal now, because aimon leaves before any line editor ran.

        The keys typed for aimon are discarded (not run by the shell it returns to) and
        bracketed paste goes off. Does nothing once the terminal was handed over.
        """
        saved, self._saved_mode = self._saved_mode, None
        if saved is None:
            return
        import termios

        with contextlib.suppress(termios.error):
            termios.tcsetattr(self._stdin, termios.TCSAFLUSH, saved)  # TCSAFLUSH: drop keys
        self._write(("" if self._cleared else "\r\x1b[K") + _BRACKETED_PASTE_OFF)
        self._cleared = True

    def _write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        while data:
            try:
                data = data[os.write(self._stdout, data):]
            except InterruptedError:
                continue
            except OSError:
                return


def _grey(text: str) -> str:
    """Return `text` in the grey prompt-toolkit uses for the banner (#888888)."""
    if "NO_COLOR" in os.environ:
        return text
    if os.environ.get("TERM") in ("linux", "eterm-color"):  # 16 colours
        return f"\x1b[0;90m{text}\x1b[0m"
    return f"\x1b[0;38;5;102m{text}\x1b[0m"


_PROVIDERS = ("anthropic", "openai")
# The keys of a settings file that choose the model (aimon's and Claude Code's files alike).
_MODEL_KEYS = (b'"provider"', b'"model"', b'"base_url"')
_OLLAMA = ("127.0.0.1", 11434)


def provider_problem(*, provider: str | None, model: str | None, base_url: str | None,
                     project_root: Path, env: Mapping[str, str]) -> str | None:
    """Return what to set because no model provider can be used, or None when one may be.

    Cheap when a provider is configured: the flags and `env` are read, nothing imported. Only
    when they name no usable provider are the settings files looked at, then Ollama's port;
    if a settings file names a provider, model or base URL, or something listens on Ollama's
    port, this says None and the runtime decides later (with the trust gate and the probe).
    The verdict and its message are `choose_provider`'s, the runtime's own.
    """
    if _configured(provider, model, base_url, env) or _stored_keys():
        return None
    if any(_names_a_model(path) for path in settings_files(project_root, env)):
        return None
    if not env.get("AIMON_NO_LOCAL_PROBE") and _ollama_listens():
        return None
    from aimon_core.llm import ModelConfigError, choose_provider  # ~50 ms, only on the way out

    try:
        choose_provider(provider=provider, model=model, base_url=base_url, env=env,
                        probe_local=lambda: None)
    except ModelConfigError as exc:
        return exc.message
    return None


def _configured(provider: str | None, model: str | None, base_url: str | None,
                env: Mapping[str, str]) -> bool:
    """Tell whether flags and `env` choose a provider with its key or base URL (as
    `choose_provider` does: flags, then AIMON_PROVIDER and AIMON_MODEL, then keys)."""
    env_model = env.get("AIMON_MODEL") or None
    chosen = (provider or _implied(model) or ("openai" if base_url else None)
              or env.get("AIMON_PROVIDER") or _implied(env_model)
              or next((name for name in _PROVIDERS if env.get(f"{name.upper()}_API_KEY")
                       or env.get(f"{name.upper()}_BASE_URL")), None))
    if chosen not in _PROVIDERS:
        return False
    prefix = chosen.upper()
    url = base_url or env.get(f"{prefix}_BASE_URL")
    if not (env.get(f"{prefix}_API_KEY") or url):
        return False
    return not (chosen == "openai" and url and not (model or env_model))


def _stored_keys() -> bool:
    """Tell whether `aimon auth login` stored a key (one stat; the runtime reads it)."""
    from aimon_core.session import user_data_dir  # platformdirs, not the credentials package

    return (user_data_dir() / "credentials.json").exists()


def _implied(model: str | None) -> str | None:
    if not model:
        return None
    if model.startswith("claude"):
        return "anthropic"
    return "openai" if model.startswith(("gpt", "o1", "o3", "o4", "chatgpt")) else None


def settings_files(project_root: Path, env: Mapping[str, str]) -> tuple[Path, ...]:
    """Return the settings files the runtime reads (`aimon_core.config.settings_paths`)."""
    from aimon_core.session import user_config_dir  # platformdirs, not the config package

    configured = env.get("CLAUDE_CONFIG_DIR")
    claude_user = Path(configured).expanduser() if configured else Path.home() / ".claude"
    root = project_root.absolute()
    return (claude_user / "settings.json", user_config_dir() / "settings.json",
            root / ".claude" / "settings.json", root / ".claude" / "settings.local.json",
            root / ".aimon" / "settings.json", root / ".aimon" / "settings.local.json")


def _names_a_model(path: Path) -> bool:
    # A clone may link a settings file to a FIFO or /dev/zero: a regular file, 4 MB at most.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        data = file.read(4 << 20)
    return any(key in data for key in _MODEL_KEYS)


def _ollama_listens() -> bool:
    import socket

    try:
        with socket.create_connection(_OLLAMA, timeout=0.3):
            return True
    except OSError:
        return False
