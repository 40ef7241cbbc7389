"""Transcript invariants: every tool_use is answered by exactly one tool_result."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from aimon_core.llm import ContentBlock, Message, TextBlock, ToolResultBlock, ToolUseBlock

INTERRUPTED_RESULT = "Interrupted: this tool call did not finish (the user stopped the turn)."
NEVER_RAN_RESULT = "Not run: aimon stopped before this tool call ran."
MAY_HAVE_RUN_RESULT = (
    "This tool call started but aimon stopped before its result was recorded; it may have run "
    "(fully or partly). Check its effect before relying on it or running it again."
)


def repair_tool_pairs(
    messages: Sequence[Message], started: Collection[str] = ()
) -> tuple[Message, ...]:
    """Return the messages with every tool_use answered and no orphan tool_result.

    A tool_use whose result is missing (a crash, a cut-off turn) gets a synthetic error result
    in the message that follows it; a tool_result that answers no tool_use of the message
    before it is dropped. Providers reject transcripts that break either rule. A missing
    result of a call in `started` (recorded as started before it ran) says that the call
    may have run; any other says it did not run.
    """
    return TranscriptRepair()(messages, started)


class TranscriptRepair:
    """`repair_tool_pairs` for a transcript that grows at its end, walking only what is new.

    It keeps the walk's state after the messages of the last call; a call whose messages
    begin with those (equal values: the same objects, in practice, checked at C speed) and
    with the same `started` goes on from there. Anything else is walked from the start. The
    executor repairs its conversation before every model call: a whole walk is ~10 ms at
    10,000 messages here, every call.
    """

    __slots__ = ("_pending", "_repaired", "_seen", "_started")

    def __init__(self) -> None:
        self._seen: tuple[Message, ...] = ()
        self._started: frozenset[str] = frozenset()
        self._repaired: list[Message] = []
        self._pending: dict[str, None] = {}

    def prime(self, repaired: Sequence[Message]) -> None:
        """Take `repaired`, a history already well formed, as walked (with no `started`).

        A resumed session's history is repaired once when its turn starts (`turn_history`);
        the executor's first call then walks only the prompt, not 10,000 messages again.
        A well-formed history walks to itself, so this is the state its walk would leave.
        """
        self._seen, self._started = tuple(repaired), frozenset()
        self._repaired = list(self._seen)
        last = self._seen[-1] if self._seen else None
        self._pending = _calls(last) if last is not None and last.role == "assistant" else {}

    def __call__(
        self, messages: Sequence[Message], started: Collection[str] = ()
    ) -> tuple[Message, ...]:
        """Return `repair_tool_pairs(messages, started)`."""
        given = tuple(messages)
        started_set = frozenset(started)
        done = len(self._seen)
        if (started_set != self._started or len(given) < done
                or given[:done] != self._seen):
            done, self._repaired, self._pending = 0, [], {}
        self._seen, self._started = given, started_set
        self._pending = _walk(given[done:], self._repaired, self._pending, started_set)
        if self._pending:
            return (*self._repaired, _synthetic(self._pending, started_set))
        return tuple(self._repaired)


def _walk(messages: Sequence[Message], repaired: list[Message], pending: dict[str, None],
          started: Collection[str]) -> dict[str, None]:
    """Append the repaired `messages` to `repaired`; return the calls left unanswered."""
    for message in messages:
        if message.role == "user":
            message, pending = _answer(message, pending, started), {}
            if not message.content:
                continue
        else:
            if pending:
                repaired.append(_synthetic(pending, started))
            pending = _calls(message)
        repaired.append(message)
    return pending


def _calls(message: Message) -> dict[str, None]:
    """Return the ids of the tool calls `message` makes, in order (the answers it awaits)."""
    return {b.id: None for b in message.content if isinstance(b, ToolUseBlock)}


def _missing(tool_use_id: str, started: Collection[str]) -> ToolResultBlock:
    text = MAY_HAVE_RUN_RESULT if tool_use_id in started else NEVER_RAN_RESULT
    return ToolResultBlock(tool_use_id=tool_use_id, content=(TextBlock(text=text),),
                           is_error=True)


def _answer(message: Message, pending: dict[str, None], started: Collection[str]) -> Message:
    """Return the user message `message` answering exactly the calls `pending`: their results
    first, in call order (a missing one made up), then the other blocks; orphan and repeated
    results dropped."""
    results: dict[str, ContentBlock] = {}
    others: list[ContentBlock] = []
    for block in message.content:
        if not isinstance(block, ToolResultBlock):
            others.append(block)
        elif block.tool_use_id in pending:
            results.setdefault(block.tool_use_id, block)
    content = (*(results.get(i) or _missing(i, started) for i in pending), *others)
    return message if content == message.content else Message(role="user", content=content)


def _synthetic(pending: dict[str, None], started: Collection[str]) -> Message:
    return Message(role="user", content=tuple(_missing(i, started) for i in pending))
