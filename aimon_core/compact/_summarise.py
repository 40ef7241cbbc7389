"""The summary: the prompt, the older messages rendered as text, and the one model call."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from aimon_core.compact._estimate import CHARS_PER_TOKEN
from aimon_core.compact._fallback import head_tail
from aimon_core.llm import (
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    LLMClient,
    LLMRequest,
    Message,
    ModelSettings,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    collect,
)

SUMMARY_SYSTEM = """\
You write the working memory of a coding agent whose conversation has grown too long. Your \
summary replaces the earlier part of the conversation: the agent will continue from it with no \
other record of what happened, so anything you leave out is lost. Be specific and factual; \
quote file paths, function names, commands and error messages exactly. Do not call tools and \
do not continue the work: only write the summary."""

SUMMARY_REQUEST = """\
Summarise the conversation above for the agent that will continue it. Use these sections:

1. Goal: what the user asked for, in their words where it matters, and every later change \
of direction or explicit preference.
2. Decisions: what was decided and why; approaches tried and rejected.
3. Files: each file read, created or changed, with what matters about it (changes made, \
relevant contents, line numbers).
4. Commands: commands run and their outcome (pass/fail, key output, errors).
5. Errors and fixes: problems met and how they were solved.
6. Open tasks: what is still to do, and the todo list as it stands (each item with its status).
7. Current work: exactly what was being done when the conversation was cut, and the next step.
"""

SUMMARY_PREAMBLE = """\
This session is being continued from a previous conversation that ran out of context. The \
summary below covers the earlier portion of the conversation; the messages after it are \
verbatim. Continue the work from where it stopped without asking the user to repeat anything.
"""

# A tool result in the rendering keeps its start and end; the summary needs what it was, not
# all of it (the agent can read a file again).
RESULT_HEAD_CHARS = 1_500
RESULT_TAIL_CHARS = 500
# The rendering is measured in characters: three a token leaves room for code and JSON.
RENDER_CHARS_PER_TOKEN = CHARS_PER_TOKEN - 1
_TODO_TOOL = "TodoWrite"


class SummaryError(Exception):
    """The model call for the summary failed or gave no usable text."""

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """The summary text and what the call cost."""

    text: str
    usage: Usage


def _render_block(block: ContentBlock) -> str | None:
    match block:
        case TextBlock(text=text):
            return text or None
        case ToolUseBlock(name=name, input=tool_input):
            arguments = json.dumps(tool_input, ensure_ascii=False, default=str)
            return f"[tool call {name}] {head_tail(arguments, head=1_500, tail=300, note='cut')}"
        case ToolResultBlock():
            kind = "tool error" if block.is_error else "tool result"
            text = head_tail(block.text, head=RESULT_HEAD_CHARS, tail=RESULT_TAIL_CHARS,
                             note="cut for the summary")
            return f"[{kind}] {text}"
        case ImageBlock():
            return "[an image]"
        case DocumentBlock(title=title):
            return f"[a document{f': {title}' if title else ''}]"
        case ThinkingBlock():
            return None  # reasoning is not part of what happened
    return None


def render_transcript(messages: Sequence[Message], *, max_chars: int) -> str:
    """Render messages as plain text for the summary, cut to `max_chars`.

    When the whole does not fit, the first message (the task, or an earlier summary) stays
    and the oldest messages after it go first.
    """
    items: list[str] = []
    for message in messages:
        parts = [p for b in message.content if (p := _render_block(b)) is not None]
        if parts:
            items.append(f"<{message.role}>\n" + "\n".join(parts) + f"\n</{message.role}>")
    total = sum(len(item) + 2 for item in items)
    omitted = 0
    while total > max_chars and len(items) > 2:
        total -= len(items.pop(1)) + 2
        omitted += 1
    if omitted:
        items.insert(1, f"[... {omitted:,} earlier messages omitted for length ...]")
    text = "\n\n".join(items)
    return text if len(text) <= max_chars else text[-max_chars:]


def latest_todos(messages: Sequence[Message]) -> str | None:
    """Return the todo list of the last TodoWrite call, as JSON text, if there is one."""
    for message in reversed(messages):
        for use in reversed(message.tool_uses):
            if use.name == _TODO_TOOL and "todos" in use.input:
                return json.dumps(use.input["todos"], ensure_ascii=False, indent=1, default=str)
    return None


def summary_message(summary: str, older: Sequence[Message]) -> Message:
    """Return the user message that carries the summary into the new transcript."""
    text = f"{SUMMARY_PREAMBLE}\n<summary>\n{summary.strip()}\n</summary>"
    todos = latest_todos(older)
    if todos is not None:
        text += f"\n\nThe todo list when the conversation was summarised (TodoWrite):\n{todos}"
    return Message(role="user", content=(TextBlock(text=text),))


async def summarise(
    older: Sequence[Message],
    *,
    client: LLMClient,
    model: str,
    window: int,
    max_tokens: int,
    instructions: str | None = None,
) -> Summary:
    """Ask the model for a summary of `older`; raise SummaryError if it gives none."""
    budget = max(window - max_tokens - 2_000, window // 4) * RENDER_CHARS_PER_TOKEN
    prompt = render_transcript(older, max_chars=budget - len(SUMMARY_REQUEST) - 2_000)
    request_text = f"<conversation>\n{prompt}\n</conversation>\n\n{SUMMARY_REQUEST}"
    if instructions and instructions.strip():
        request_text += f"\nFocus and instructions for this summary: {instructions.strip()}\n"
    request = LLMRequest(
        model=model,
        system=SUMMARY_SYSTEM,
        messages=(Message.user(request_text),),
        settings=ModelSettings(max_tokens=max_tokens),
        metadata={"purpose": "compaction"},
    )
    response = await collect(client.stream(request))
    text = response.text.strip()
    if not text:
        raise SummaryError("the model returned an empty summary", usage=response.usage)
    if response.stop_reason is StopReason.MAX_TOKENS:
        text += "\n\n(The summary was cut off at its length limit.)"
    return Summary(text=text, usage=response.usage)
