"""The history a turn sends: well formed whatever failed or crashed before it.

A turn that failed before the model answered (a network error, a kill -9 mid-stream) leaves
its prompt in the transcript with no answer. Sending it again would put two user messages in
a row and silently resend the failed prompt; instead it is left out of the request and named
to the user, who can send it again on purpose.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from aimon_core.agent import repair_tool_pairs
from aimon_core.live._shell import is_shell_record
from aimon_core.llm import Message, ToolResultBlock


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnHistory:
    """What a turn sends: the history, its prompt, and the earlier prompts left unanswered."""

    history: tuple[Message, ...]
    prompt: Message
    # The text of prompts at the end of the history that never got an answer (not resent).
    unanswered: tuple[str, ...] = ()
    # The tool results that ended the history and now lead `prompt` (None: nothing merged).
    carried: Message | None = None


def _answers_tools(message: Message) -> bool:
    """Tell whether `message` leads the next prompt rather than being one: tool results,
    or a `!command` the person ran (`_shell`)."""
    return is_shell_record(message) or any(
        isinstance(block, ToolResultBlock) for block in message.content)


def turn_history(history: Sequence[Message], prompt: Message,
                 started: Collection[str] = ()) -> TurnHistory:
    """Return `history` and `prompt` with every tool call answered and no two user turns.

    A user prompt followed by another user message got no answer: it is dropped. Tool
    results followed by a user message (the model failed after the tools ran, or a crash
    recovery answered them) are merged with it, as providers want results to lead the turn.
    """
    out: list[Message] = []
    for message in repair_tool_pairs(history, started):
        if out and out[-1].role == "user" and message.role == "user":
            out[-1:] = [_joined(out[-1], message)]
        else:
            out.append(message)
    unanswered: tuple[str, ...] = ()
    carried = None
    if out and out[-1].role == "user":
        last = out.pop()
        if _answers_tools(last):
            prompt, carried = _joined(last, prompt), last
        elif last.text.strip():
            unanswered = (last.text.strip(),)
    return TurnHistory(history=tuple(out), prompt=prompt, unanswered=unanswered,
                       carried=carried)


def stored_part(message: Message, carried: Message | None) -> Message:
    """Return what to store of a prompt that `carried` results (already stored) lead."""
    if carried is None or message.content[:len(carried.content)] != carried.content:
        return message
    return Message(role=message.role, content=message.content[len(carried.content):])


def _joined(first: Message, second: Message) -> Message:
    """Return the user message that replaces two in a row (an unanswered prompt is dropped)."""
    if not _answers_tools(first):
        return second
    return Message(role="user", content=(*first.content, *second.content))
