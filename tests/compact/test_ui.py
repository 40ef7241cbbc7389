"""How a compaction shows: one line in the REPL, stderr or a stream-json line in print mode,
and the context size in /status."""

from __future__ import annotations

import io
import json

from rich.console import Console

from aimon_cli._print import _StreamJson, compaction_json
from aimon_cli.render import Renderer
from aimon_core.agent import Compacted
from aimon_core.llm import Usage

AUTO = Compacted(trigger="auto", text="Conversation compacted (16,290 → 9,435 tokens). The "
                 "summary replaced 1 turn and 5 tool results; the model no longer sees them "
                 "verbatim.", tokens_before=16_290, tokens_after=9_435, summarised=True,
                 usage=Usage(input_tokens=3_000, output_tokens=40), cost_usd=0.0096)


def rendered(*events: Compacted) -> str:
    out = io.StringIO()
    renderer = Renderer(Console(file=out, width=80, color_system=None))
    for event in events:
        renderer(event)
    return out.getvalue()


def test_the_repl_prints_an_automatic_compaction_as_one_line() -> None:
    text = rendered(AUTO)
    assert text.startswith("⟲ Conversation compacted (16,290 → 9,435 tokens).")
    manual = Compacted(trigger="manual", text="Conversation compacted (1 → 0 tokens).",
                       tokens_before=1, tokens_after=0, summarised=True)
    assert rendered(manual) == ""  # /compact shows its own outcome


def test_repeated_failures_add_the_advice() -> None:
    failed = Compacted(trigger="auto", text="Conversation not summarised (the summary failed)",
                       tokens_before=9, tokens_after=5, summarised=False,
                       advice="Compacting the conversation has failed 3 times in a row")
    text = rendered(failed)
    assert "Conversation not summarised" in text and "failed 3 times" in text


def test_stream_json_has_a_compaction_line() -> None:
    out = io.StringIO()
    _StreamJson(out)(AUTO)
    line = json.loads(out.getvalue())
    assert line == compaction_json(AUTO)
    assert (line["type"], line["trigger"], line["tokens_before"], line["tokens_after"]) == (
        "compaction", "auto", 16_290, 9_435)
    assert line["usage"]["input_tokens"] == 3_000 and line["cost_usd"] == 0.0096
