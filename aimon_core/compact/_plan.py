"""Where to cut a transcript: older messages to summarise, recent ones kept verbatim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aimon_core.compact._estimate import message_tokens
from aimon_core.llm import Message, ToolResultBlock


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPlan:
    """A transcript split in two: `older` is summarised, `recent` stays as it is."""

    older: tuple[Message, ...]
    recent: tuple[Message, ...]


def is_cut_point(messages: Sequence[Message], index: int) -> bool:
    """Return whether the transcript may be split just before `messages[index]`.

    A cut never separates a tool_use from its tool_result: the recent part starts with an
    assistant message or with a user message that answers no tool call, and the older part
    does not end with tool calls waiting for their results.
    """
    if not 0 < index < len(messages):
        return False
    first, before = messages[index], messages[index - 1]
    if before.role == "assistant" and before.tool_uses:
        return False
    if first.role == "assistant":
        return True
    return not any(isinstance(block, ToolResultBlock) for block in first.content)


def plan_compaction(
    messages: Sequence[Message], *, keep_recent_tokens: int
) -> CompactionPlan | None:
    """Return the split that keeps the most recent messages within `keep_recent_tokens`.

    Whole turns are kept when one fits (the cut falls before a prompt); otherwise the cut
    falls before an assistant message, in the middle of the turn.

    The recent part is never empty: if even the shortest tail passes the budget, that tail
    is kept (the fallback shortens it if it must). Returns None when no cut is possible (a
    transcript of one message, or one long tool exchange with no boundary in it).
    """
    suffix = [0] * (len(messages) + 1)
    for index in range(len(messages) - 1, -1, -1):
        suffix[index] = suffix[index + 1] + message_tokens(messages[index])
    cuts = [i for i in range(1, len(messages)) if is_cut_point(messages, i)]
    if not cuts:
        return None
    within = [i for i in cuts if suffix[i] <= keep_recent_tokens]
    # A cut at a prompt keeps whole turns: the model sees the request it is working on.
    prompts = [i for i in within if messages[i].role == "user"]
    cut = prompts[0] if prompts else within[0] if within else cuts[-1]
    return CompactionPlan(older=tuple(messages[:cut]), recent=tuple(messages[cut:]))
