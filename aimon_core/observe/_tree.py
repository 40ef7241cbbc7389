"""A trace as a tree of lines: where the time went and what it cost, at a glance."""

from __future__ import annotations

from collections.abc import Sequence

from aimon_core.observe._spans import SpanRecord


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.1f}s"


def _facts(span: SpanRecord) -> str:
    a = span.attributes
    parts: list[str] = []
    if "gen_ai.usage.output_tokens" in a and span.name.startswith("chat "):
        parts.append(f"{a.get('gen_ai.usage.input_tokens', 0)} in · "
                     f"{a['gen_ai.usage.output_tokens']} out")
        cached = a.get("gen_ai.usage.cache_read.input_tokens", 0)
        if cached:
            parts.append(f"{cached} cached")
    if "aimon.time_to_first_token_s" in a:
        parts.append(f"first token {_seconds(float(a['aimon.time_to_first_token_s']))}")
    if a.get("aimon.retries"):
        parts.append(f"{a['aimon.retries']} retries")
    if "aimon.tool.decision" in a:
        decision = str(a["aimon.tool.decision"])
        if a.get("aimon.tool.asked"):
            decision = f"asked, {a.get('aimon.tool.answer', 'no answer')}"
        elif "aimon.tool.decided_by" in a:
            by = str(a["aimon.tool.decided_by"])  # "allowed by rule Edit", or "read-only tool"
            decision = by if by.startswith(decision) else f"{decision} by {by}"
        parts.append(decision)
    if "aimon.tool.exit_status" in a:
        parts.append(f"exit {a['aimon.tool.exit_status']}")
    if "aimon.stop" in a:
        parts.append(str(a["aimon.stop"]))
    cost = a.get("aimon.cost_usd")
    if isinstance(cost, int | float) and cost:
        parts.append(f"${cost:.4f}")
    if span.error:
        parts.append(f"error: {span.error[:80]}")
    return " · ".join(parts)


def render_trace(spans: Sequence[SpanRecord]) -> str:
    """Return the spans as an indented tree, one line a span: name, duration, facts."""
    children: dict[str, list[SpanRecord]] = {}
    ids = {s.span_id for s in spans}
    for span in sorted(spans, key=lambda s: s.start):
        parent = span.parent_id if span.parent_id in ids else ""
        children.setdefault(parent, []).append(span)
    lines: list[str] = []

    def walk(span: SpanRecord, prefix: str, last: bool, top: bool) -> None:
        branch = "" if top else ("└─ " if last else "├─ ")
        facts = _facts(span)
        lines.append(f"{prefix}{branch}{span.name}  {_seconds(span.duration_s)}"
                     + (f"  {facts}" if facts else ""))
        below = children.get(span.span_id, [])
        inner = prefix if top else prefix + ("   " if last else "│  ")
        for index, child in enumerate(below):
            walk(child, inner, index == len(below) - 1, False)

    for root in children.get("", []):
        walk(root, "", True, True)
    return "\n".join(lines)


def trace_summary(spans: Sequence[SpanRecord]) -> str:
    """Return one line: executions, time, model calls and their share, tool time, cost."""
    roots = [s for s in spans if not s.parent_id]
    total = sum(s.duration_s for s in roots)
    model = sum(s.duration_s for s in spans if s.name.startswith("chat "))
    tools = sum(s.duration_s for s in spans if s.name.startswith("execute_tool "))
    cost = sum(float(s.attributes.get("aimon.cost_usd", 0.0)) for s in roots)
    share = f" ({model / total:.0%})" if total else ""
    count = f"{len(roots)} execution{'s' * (len(roots) != 1)}"
    return (f"{count} · {_seconds(total)} · model calls {_seconds(model)}"
            f"{share} · tools {_seconds(tools)} · ${cost:.4f}")
