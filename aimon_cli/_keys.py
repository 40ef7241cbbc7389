"""The REPL's keys: Enter sends (a trailing \\ or Esc Enter makes a newline), Ctrl-C and
Esc interrupt a running turn (Ctrl-C twice at an empty prompt leaves), ctrl+o shows the last
folded tool result, Esc Esc at an empty prompt rewinds, Shift-Tab switches the permission
mode, Ctrl-G edits the prompt in $EDITOR, Ctrl-V pastes an image from the clipboard.

What the keys act on is the REPL session (`KeyHost`); this module only binds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from prompt_toolkit.filters import Condition, is_searching
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

if TYPE_CHECKING:
    from aimon_core.permission import PermissionPolicy


class KeyHost(Protocol):
    """What the REPL's keys act on."""

    def busy(self) -> bool:
        """Tell whether a turn runs."""
        ...

    def idle_and_empty(self) -> bool:
        """Tell whether no turn runs and the prompt is empty."""
        ...

    def interrupt(self) -> bool:
        """Interrupt the running turn; False when there is none."""
        ...

    def ctrl_c(self, *, had_text: bool) -> None:
        """Handle Ctrl-C (`had_text`: it cleared a draft)."""
        ...

    def expand_last(self) -> None:
        """Show the last folded tool result whole."""
        ...

    def cycle_mode(self) -> None:
        """Switch to the next permission mode (default → acceptEdits → plan)."""
        ...

    def paste_image(self) -> None:
        """Attach the clipboard's image to the prompt (or say why there is none)."""
        ...


def repl_key_bindings(host: KeyHost) -> KeyBindings:
    """Return the REPL prompt's key bindings, acting on `host`."""
    bindings = KeyBindings()

    # While Ctrl-R searches the history, Enter is the search's: it takes the prompt found.
    @bindings.add("enter", filter=~is_searching)
    def _send(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        if buffer.document.text_before_cursor.endswith("\\"):  # \ then Enter: a newline
            buffer.delete_before_cursor(1)
            buffer.insert_text("\n")
            return
        if host.busy() and not buffer.text.lstrip().startswith("/"):
            # Queued: it is shown where it runs, not above the answer it would split.
            event.app.erase_when_done = True
        buffer.validate_and_handle()

    @bindings.add("escape", "enter")
    def _newline(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    @bindings.add("c-c")
    def _ctrl_c(event: KeyPressEvent) -> None:
        buffer = event.current_buffer
        had_text = bool(buffer.text) and not host.busy()
        if had_text:  # at an idle prompt, Ctrl-C clears the draft
            buffer.reset()
        host.ctrl_c(had_text=had_text)

    @bindings.add("c-o")
    def _expand(event: KeyPressEvent) -> None:
        host.expand_last()

    @bindings.add("s-tab")
    def _mode(event: KeyPressEvent) -> None:
        host.cycle_mode()
        event.app.invalidate()

    @bindings.add("c-g")
    def _edit(event: KeyPressEvent) -> None:
        event.current_buffer.open_in_editor()

    @bindings.add("c-v")
    def _image(event: KeyPressEvent) -> None:
        host.paste_image()

    @bindings.add("escape", filter=Condition(host.busy))
    def _escape(event: KeyPressEvent) -> None:
        host.interrupt()

    @bindings.add("escape", "escape", filter=Condition(host.idle_and_empty))
    def _rewind(event: KeyPressEvent) -> None:
        event.current_buffer.text = "/rewind"
        event.current_buffer.validate_and_handle()

    return bindings


def next_mode(policy: PermissionPolicy) -> None:
    """Switch `policy` to the next mode of Shift-Tab's cycle: default → acceptEdits → plan."""
    from aimon_core.permission import PermissionMode

    order = (PermissionMode.DEFAULT, PermissionMode.ACCEPT_EDITS, PermissionMode.PLAN)
    current = policy.mode if policy.mode in order else PermissionMode.PLAN
    policy.set_mode(order[(order.index(current) + 1) % len(order)])
