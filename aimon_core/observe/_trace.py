"""Tracing: the execution interceptor that makes a span tree of each execution.

For one execution it lends the executor a runtime whose client and gate it watches (model
calls: tokens, cost, time to first token, retries; tool calls: the gate's decision) and a Turn
whose events it hears (iterations, tool calls, compaction), whose asker it watches (each
approval's question and answer) and whose hook dispatcher it watches (`_hooks`: a span for
each event some hook runs for). The spans follow the OpenTelemetry GenAI semantic conventions
where they exist (`gen_ai.*`); aimon's own facts are `aimon.*`. The prompt and tool output are
kept only when `tracing.includeContent` is set.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aimon_core.agent import (
    AgentEvent,
    ApprovalAnswer,
    ApprovalRequest,
    Asker,
    Compacted,
    IterationStarted,
    ToolCallFinished,
    ToolCallStarted,
)
from aimon_core.llm import (
    DEFAULT_PRICES,
    LLMRequest,
    LLMResponse,
    ResponseCompleted,
    RetryScheduled,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolUseStarted,
)
from aimon_core.observe._chain import execution_kind
from aimon_core.observe._hooks import traced_hooks
from aimon_core.observe._spans import Attribute, SpanExporter, SpanRecord, TraceSpanStore

if TYPE_CHECKING:
    from aimon_core.agent import (
        AgentRuntime,
        ExecutionRequest,
        ExecutionResult,
        GateVerdict,
        ToolGate,
    )
    from aimon_core.hook import PermissionDecision
    from aimon_core.llm import LLMClient, PriceTable
    from aimon_core.observe._chain import ExecutionProceed
    from aimon_core.tools import Tool, ToolContext

_CONTENT_LIMIT = 4_000


@dataclass(slots=True)
class _Open:
    span_id: str
    parent_id: str
    name: str
    start: float
    attributes: dict[str, Attribute] = field(default_factory=dict)


class _Recorder:
    """The spans of one execution, as its events and calls arrive."""

    def __init__(self, clock: Callable[[], float], include_content: bool,
                 parent: _Recorder | None = None) -> None:
        self.trace_id: str = parent.trace_id if parent is not None else os.urandom(16).hex()
        self.clock = clock
        self.include_content = include_content
        self.done: list[SpanRecord] = []
        # A fork started by a tool call of a traced turn is a child of that call's span.
        self.root = self.open("execution", parent.calling() if parent is not None else "")
        self.iteration: _Open | None = None
        self.tools: dict[str, _Open] = {}
        self.decisions: dict[str, dict[str, Attribute]] = {}
        self.mark = self.root.start  # when the last model call or iteration began or ended

    def open(self, name: str, parent_id: str, **attributes: Attribute) -> _Open:
        return _Open(span_id=os.urandom(8).hex(), parent_id=parent_id, name=name,
                     start=self.clock(), attributes=dict(attributes))

    def close(self, span: _Open, error: str = "", end: float | None = None) -> None:
        self.done.append(SpanRecord(
            trace_id=self.trace_id, span_id=span.span_id, parent_id=span.parent_id,
            name=span.name, start=span.start, end=self.clock() if end is None else end,
            attributes=dict(span.attributes), error=error))

    def parent(self) -> str:
        return (self.iteration or self.root).span_id

    def calling(self) -> str:
        """Return the span of the tool call that started last and is still running."""
        running = sorted(self.tools.values(), key=lambda span: span.start)
        return running[-1].span_id if running else self.parent()

    def on_event(self, event: AgentEvent) -> None:
        match event:
            case IterationStarted(iteration=number):
                if self.iteration is not None:
                    self.close(self.iteration)
                self.iteration = self.open(f"iteration {number}", self.root.span_id,
                                           **{"aimon.iteration": number})
                self.mark = self.iteration.start
            case ToolCallStarted(tool_use_id=use_id, name=name):
                self.tools[use_id] = self.open(f"execute_tool {name}", self.parent(), **{
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": use_id, **_mcp(name)})
            case ToolCallFinished(tool_use_id=use_id) as finished:
                self._tool_finished(finished)
            case Compacted() as done:
                span = _Open(span_id=os.urandom(8).hex(), parent_id=self.parent(),
                             name="compaction", start=self.mark, attributes={
                                 "aimon.compaction.trigger": done.trigger,
                                 "aimon.compaction.tokens_before": done.tokens_before,
                                 "aimon.compaction.tokens_after": done.tokens_after,
                                 "aimon.compaction.summarised": done.summarised,
                                 "aimon.cost_usd": done.cost_usd})
                self.close(span)
                self.mark = self.clock()
            case _:
                pass

    def _tool_finished(self, finished: ToolCallFinished) -> None:
        span = self.tools.pop(finished.tool_use_id, None)
        if span is None:
            return
        span.attributes.update(self.decisions.pop(finished.tool_use_id, {}))
        span.attributes.setdefault("aimon.tool.decision", "not run")
        result = finished.result
        code = result.data.get("exit_code")
        if isinstance(code, int):
            span.attributes["aimon.tool.exit_status"] = code
        span.attributes["aimon.tool.is_error"] = result.is_error
        if self.include_content:
            span.attributes["aimon.tool.output"] = result.text[:_CONTENT_LIMIT]
            span.attributes["aimon.tool.input"] = finished.label[:_CONTENT_LIMIT]
        error = ""
        if result.is_error:  # its text is the tool's output too: kept only with the content
            error = result.text[:200] if self.include_content else "tool error"
        self.close(span, error=error)

    def asking(self, ask: Asker | None) -> Asker | None:
        """Return `ask`, watched: the call it asks about notes the question and the answer."""
        if ask is None:
            return None

        async def watched(request: ApprovalRequest) -> ApprovalAnswer | None:
            facts = self.decisions.setdefault(request.tool_use_id, {})
            facts["aimon.tool.asked"] = True
            answer = await ask(request)
            facts["aimon.tool.answer"] = (
                "no answer" if answer is None else
                f"allowed for {answer.scope.value}" if answer.allowed else "denied")
            return answer

        return watched

    def decided(self, use_id: str, verdict: GateVerdict) -> None:
        facts = self.decisions.setdefault(use_id, {})
        facts["aimon.tool.decision"] = "allowed" if verdict.allowed else "denied"
        if verdict.decided_by:
            facts["aimon.tool.decided_by"] = verdict.decided_by


def _mcp(name: str) -> dict[str, Attribute]:
    if name.startswith("mcp__"):
        server = name.split("__")[1]
        return {"aimon.mcp.server": server}
    return {}


class _TracedClient:
    """The execution's client, watched: one `chat` span a model call."""

    def __init__(self, inner: LLMClient, recorder: _Recorder, prices: PriceTable) -> None:
        self.inner = inner
        self.recorder = recorder
        self.prices = prices

    @property
    def provider(self) -> str:
        return self.inner.provider

    async def call(self, request: LLMRequest) -> LLMResponse:
        span = self._open(request)
        try:
            response = await self.inner.call(request)
        except BaseException as exc:
            self.recorder.close(span, error=str(exc) or type(exc).__name__)
            raise
        self._completed(span, request, response)
        return response

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        span = self._open(request)
        retries = 0
        completed = False  # its span closed with the response (an interrupt after it adds none)
        try:
            async for event in self.inner.stream(request):
                match event:
                    case TextDelta() | ThinkingDelta() | ToolUseStarted():
                        span.attributes.setdefault("aimon.time_to_first_token_s",
                                                   round(self.recorder.clock() - span.start, 6))
                    case RetryScheduled():
                        retries += 1
                        span.attributes["aimon.retries"] = retries
                    case ResponseCompleted(response=response):
                        self._completed(span, request, response)
                        completed = True
                    case _:
                        pass
                yield event
        except BaseException as exc:
            if not completed:
                self.recorder.close(span, error=str(exc) or type(exc).__name__)
            raise
        if not completed:
            self.recorder.close(span, error="the stream ended without a complete response")

    def _open(self, request: LLMRequest) -> _Open:
        return self.recorder.open(f"chat {request.model}", self.recorder.parent(), **{
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": request.model})

    def _completed(self, span: _Open, request: LLMRequest, response: LLMResponse) -> None:
        usage = response.usage
        span.attributes.update({
            "gen_ai.response.model": response.model, "gen_ai.response.id": response.id,
            "gen_ai.response.finish_reasons": response.stop_reason.value,
            "gen_ai.usage.input_tokens": usage.input_tokens + usage.cache_read_tokens
            + usage.cache_write_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
            "aimon.cost_usd": self.prices.cost(request.model, self.provider, usage)})
        self.recorder.close(span)
        self.recorder.mark = self.recorder.clock()

    async def aclose(self) -> None:
        """The runtime's client is closed by its owner, never by one execution."""


def _traced_gate(gate: ToolGate, recorder: _Recorder) -> ToolGate:
    async def traced(tool: Tool, tool_input: Mapping[str, Any], ctx: ToolContext, *,
                     hint: PermissionDecision | None = None, tool_use_id: str = ""
                     ) -> GateVerdict:
        verdict = await gate(tool, tool_input, ctx, hint=hint, tool_use_id=tool_use_id)
        recorder.decided(tool_use_id, verdict)
        return verdict

    return traced


class Tracing:
    """The execution interceptor that traces: spans to the local store and the exporter."""

    def __init__(self, *, store: TraceSpanStore | None, exporter: SpanExporter | None = None,
                 include_content: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.exporter = exporter
        self._include_content = include_content
        self._clock = clock
        # The turn each session is running now, for the forks its tool calls start.
        self._turns: dict[str, _Recorder] = {}

    async def around_execution(self, runtime: AgentRuntime, request: ExecutionRequest,
                               proceed: ExecutionProceed) -> ExecutionResult:
        """Run the execution watched; keep and export its spans when it ends."""
        turn = request.turn
        kind = execution_kind(turn)
        parent = self._turns.get(turn.session_id) if kind == "fork" else None
        recorder = _Recorder(self._clock, self._include_content(), parent)
        root = recorder.root
        root.name = f"invoke_agent {runtime.agent.name}"
        root.attributes.update({
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": runtime.agent.name,
            "gen_ai.conversation.id": turn.session_id, "gen_ai.request.model": runtime.model,
            "aimon.execution.id": str(turn.execution_id), "aimon.execution.kind": kind})
        if recorder.include_content:
            root.attributes["aimon.prompt"] = request.prompt.text[:_CONTENT_LIMIT]
        emit = turn.emit

        def on_event(event: AgentEvent) -> None:
            recorder.on_event(event)
            emit(event)

        watched = replace(runtime, client=_TracedClient(
            runtime.client, recorder, runtime.prices or DEFAULT_PRICES),
            gate=_traced_gate(runtime.gate, recorder))
        if kind == "turn":
            self._turns[turn.session_id] = recorder
        try:
            watching = replace(turn, emit=on_event, hooks=traced_hooks(turn.hooks, recorder),
                               ask=recorder.asking(turn.ask))
            result = await proceed(watched, replace(request, turn=watching))
        except BaseException as exc:
            await self._finish(recorder, turn.session_id, parent, error=type(exc).__name__)
            raise
        finally:
            if self._turns.get(turn.session_id) is recorder:
                del self._turns[turn.session_id]
        root.attributes.update({
            "aimon.stop": result.stop.value, "aimon.iterations": result.iterations,
            "aimon.tool_calls": result.tool_calls, "aimon.cost_usd": result.cost_usd,
            "gen_ai.usage.input_tokens": result.usage.input_tokens,
            "gen_ai.usage.output_tokens": result.usage.output_tokens})
        await self._finish(recorder, turn.session_id, parent,
                           error="" if result.stop.ok else result.reason)
        return result

    async def _finish(self, recorder: _Recorder, session_id: str, parent: _Recorder | None,
                      error: str) -> None:
        for span in list(recorder.tools.values()):
            recorder.close(span, error="interrupted")
        if recorder.iteration is not None:
            recorder.close(recorder.iteration)
        recorder.close(recorder.root, error=error)
        if parent is not None and self._turns.get(session_id) is parent:
            parent.done.extend(recorder.done)  # kept and sent with the turn that started it
            return
        spans = _parents_first(recorder.done)
        if self.store is not None and session_id:
            await asyncio.shield(asyncio.to_thread(self.store.append, session_id, spans))
        if self.exporter is not None:
            self.exporter.export(spans)


def _parents_first(spans: list[SpanRecord]) -> tuple[SpanRecord, ...]:
    """Return the spans a parent before its children, siblings by their start."""
    children: dict[str, list[SpanRecord]] = {}
    ids = {span.span_id for span in spans}
    for span in sorted(spans, key=lambda s: s.start):
        # A span whose parent is not here (a fork that outlived its turn) is a root here.
        children.setdefault(span.parent_id if span.parent_id in ids else "", []).append(span)
    ordered: list[SpanRecord] = []
    waiting = list(reversed(children.get("", [])))
    while waiting:
        span = waiting.pop()
        ordered.append(span)
        waiting.extend(reversed(children.get(span.span_id, [])))
    return tuple(ordered)
