"""The Orca executor: the ReAct loop of one execution (model call → tool calls → again).

The name is the seeds' (the Java design this descends from), so a reader of DESIGN.md finds it.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import aimon_core.agent._prompt as prompts
from aimon_core.agent._budget import BudgetTracker, ExecutionBudget
from aimon_core.agent._events import (
    AssistantMessageCompleted,
    AssistantTextDelta,
    AssistantThinkingDelta,
    Compacted,
    ExecutionFinished,
    ExecutionResult,
    ExecutionStarted,
    IterationStarted,
    ModelRetrying,
    ModelStreamRestarted,
    StopCause,
    ToolCallAnnounced,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
)
from aimon_core.agent._hooks import HookStopError, TurnHooks
from aimon_core.agent._prompt import Environment, assemble_system_prompt, gather_environment
from aimon_core.agent._runtime import AgentRuntime
from aimon_core.agent._transcript import INTERRUPTED_RESULT, TranscriptRepair
from aimon_core.agent._turn import Turn
from aimon_core.agent._usage import call_cost, interrupted_usage
from aimon_core.llm import (
    LLMError,
    LLMRequest,
    LLMResponse,
    Message,
    ModelSettings,
    ResponseCompleted,
    RetryScheduled,
    StopReason,
    StreamRestarted,
    TextBlock,
    TextDelta,
    ThinkingDelta,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseStarted,
    Usage,
    UsageReported,
)
from aimon_core.tools import (
    ConcurrencyBehavior,
    FinishedOnInterruptError,
    InterruptBehavior,
    LiveOutput,
    Tool,
    ToolContext,
    ToolResult,
    call_label,
    check_input,
    execute_tool,
    run_to_end,
)

REPEAT_LIMIT = 3


class Compactor(Protocol):
    """Keeps an execution's requests inside the model's context window (`aimon_core.compact`).

    The executor asks before every model call and once after a "prompt is too long" refusal;
    a `Compacted` it gets back replaces the transcript and is emitted as an event.
    """

    async def before_call(self, request: LLMRequest) -> Compacted | None:
        """Return a compaction if `request` would pass the threshold, else None."""
        ...

    async def after_refusal(self, request: LLMRequest, error: LLMError) -> Compacted | None:
        """Return a compaction if `error` says `request` is too long, else None."""
        ...

    def observe(self, request: LLMRequest, usage: Usage) -> None:
        """Learn from the usage of a response how far the size estimates are off."""
        ...

    async def limit_result(self, block: ToolResultBlock) -> ToolResultBlock:
        """Return `block`, or if it is too large, its head and tail and where the rest is."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionRequest:
    """One execution's input: the new user message, the history, limits, and its Turn.

    The Turn carries what the execution's owner gives it (ids, hooks, the event sink, the
    asker, the session's approvals, persistence); the executor passes it on to the permission
    gate and the tools in the tool context (`ToolContext.turn`).
    """

    prompt: Message
    tool_context: ToolContext
    turn: Turn = field(default_factory=Turn)
    history: tuple[Message, ...] = ()
    # The history is well formed already (every call answered, no orphan result, as
    # `repair_tool_pairs` leaves it): the first model call's repair walks only what follows.
    history_repaired: bool = False
    budget: ExecutionBudget = field(default_factory=ExecutionBudget)
    environment: Environment | None = None
    variables: Mapping[str, str] = field(default_factory=dict)
    # Measures requests and compacts the transcript between iterations (None: never).
    compactor: Compactor | None = None


@dataclass(slots=True)
class _Run:
    """Mutable state of one execution; lives only inside `execute`."""

    runtime: AgentRuntime
    request: ExecutionRequest
    tracker: BudgetTracker
    messages: list[Message]
    # The request's tool context with its Turn: what the gate and the tools are given.
    context: ToolContext
    new_messages: list[Message] = field(default_factory=list)
    cost_usd: float = 0.0
    tool_calls: int = 0
    last_call: str | None = None
    repeats: int = 0
    hooks: TurnHooks | None = None
    hook_stop: str | None = None
    stop_hook_active: bool = False
    usage_estimated: bool = False
    # Repairs only what each model call adds (a whole walk: 5-10 ms at 10,000 messages).
    repair: TranscriptRepair = field(default_factory=TranscriptRepair)
    # The output of each running call so far (tool_use id → its live output).
    output: dict[str, LiveOutput] = field(default_factory=dict)

    @property
    def turn(self) -> Turn:
        return self.request.turn

    def commit(self, message: Message) -> None:
        self.messages.append(message)
        self.new_messages.append(message)
        self.request.turn.persist(message)

    def emit(self, event: Any) -> None:
        self.request.turn.emit(event)


class AgentExecutor(Protocol):
    """Runs one execution of an agent runtime to its end (the seeds' AgentExecutor seam).

    `OrcaExecutor` is aimon's; a live session or a fork takes another (a tracing decorator,
    a test double) where it is given one.
    """

    async def execute(self, runtime: AgentRuntime, request: ExecutionRequest) -> ExecutionResult:
        """Run the execution `request` describes and return how it ended."""
        ...


class OrcaExecutor:
    """Runs executions of an agent: model call, tool calls, repeat until an answer or a limit."""

    async def execute(self, runtime: AgentRuntime, request: ExecutionRequest) -> ExecutionResult:
        """Run one execution to its end and return how it ended.

        Cancellation (Ctrl-C) is recorded — partial text kept, every pending tool call
        answered as interrupted — and then re-raised.
        """
        run = _Run(
            runtime=runtime,
            request=request,
            tracker=BudgetTracker(request.budget),
            messages=list(request.history),
            context=replace(request.tool_context, turn=request.turn),
        )
        if request.history_repaired:
            run.repair.prime(request.history)
        run.emit(ExecutionStarted(execution_id=request.turn.execution_id,
                                  prompt=request.prompt.text))
        run.hooks = TurnHooks(request.turn.hooks, run.emit)
        try:
            # The time limit holds inside model and tool calls too, not only between them.
            async with asyncio.timeout(run.tracker.remaining_seconds()) as deadline:
                result = await self._start(run)
        except asyncio.CancelledError:
            self._finish(run, StopCause.INTERRUPTED, "interrupted by the user")
            raise
        except TimeoutError:
            if not deadline.expired():
                raise
            result = self._result(run, StopCause.TIME_LIMIT,
                                  f"stopped: {run.tracker.time_limit_reason()}")
        run.emit(ExecutionFinished(result=result))
        return result

    async def _start(self, run: _Run) -> ExecutionResult:
        request, runtime = run.request, run.runtime
        assert run.hooks is not None
        if run.hooks.has_start_hooks() and run.turn.before_changes is not None:
            await run.turn.before_changes  # a UserPromptSubmit hook may change the project
        try:
            blocked, context = await run.hooks.on_start(request.prompt.text)
        except HookStopError as exc:
            return self._result(run, StopCause.HOOK_STOPPED, exc.reason)
        if blocked is not None:
            return self._result(run, StopCause.PROMPT_BLOCKED, f"prompt blocked: {blocked}")
        prompt = request.prompt
        if context:
            prompt = Message(role="user", content=(*prompt.content, TextBlock(text=context)))
        prompt = await prompts.refresh(prompt, runtime.context, run.context, run.messages)
        run.commit(prompt)
        env = request.environment or await gather_environment(
            request.tool_context.project_root, request.tool_context.cwd,
            path_filter=request.tool_context.path_filter,
        )
        system = assemble_system_prompt(runtime.agent, env, dict(request.variables),
                                        refreshed=runtime.context is not None)
        return await self._loop(run, system)

    async def _loop(self, run: _Run, system: str) -> ExecutionResult:
        while True:
            limit = run.tracker.exhausted()
            if limit is not None:
                cause, why = limit
                return self._result(run, cause, f"stopped: {why}")
            run.tracker.iterations += 1
            run.emit(IterationStarted(iteration=run.tracker.iterations))
            try:
                response = await self._call_model(run, system)
            except LLMError as exc:
                run.tracker.iterations -= 1
                return self._result(run, StopCause.MODEL_ERROR, str(exc), error=exc)
            run.commit(response.message)
            tool_uses = response.message.tool_uses
            if not tool_uses:
                insist = await self._stop_hooks(run, response)
                if insist is None:
                    return self._answered(run, response)
                if isinstance(insist, ExecutionResult):
                    return insist
                run.commit(Message(role="user", content=(TextBlock(text=insist),)))
                continue
            if response.stop_reason is StopReason.MAX_TOKENS:
                self._cut_off(run, tool_uses)  # a call cut off mid-way is never run
                continue
            stop = await self._run_tools(run, tool_uses)
            if run.hook_stop is not None:
                return self._result(run, StopCause.HOOK_STOPPED, run.hook_stop)
            if stop is not None:
                return self._result(run, StopCause.REPEATED_TOOL_CALL, stop)

    def _cut_off(self, run: _Run, tool_uses: Sequence[ToolUseBlock]) -> None:
        """Answer the calls of a response cut off at the output limit: none of them runs."""
        results: dict[str, ToolResultBlock] = {}
        for use in tool_uses:
            refused = ToolResult.error(
                "Not run: your response was cut off at the output token limit, so this call "
                "may be incomplete. Send it again, shorter (split a large Write or Edit).")
            results[use.id] = _result_block(use, refused)
            run.emit(ToolCallFinished(tool_use_id=use.id, name=use.name, input=use.input,
                                      result=refused, duration_s=0.0, label=_label(run, use)))
        self._commit_results(run, tool_uses, results)

    async def _stop_hooks(self, run: _Run, response: LLMResponse) -> str | ExecutionResult | None:
        """Run Stop hooks: None to finish, feedback to go on, or a result if one stopped."""
        assert run.hooks is not None
        try:
            return await run.hooks.on_stop(response.text, run.stop_hook_active)
        except HookStopError as exc:
            return self._result(run, StopCause.HOOK_STOPPED, exc.reason)
        finally:
            run.stop_hook_active = True

    async def _call_model(self, run: _Run, system: str) -> LLMResponse:
        """Compact if the request would pass the threshold, call the model, and after a
        "prompt is too long" refusal compact and retry once (a second refusal is raised)."""
        compactor = run.request.compactor
        request = _model_request(run, system)
        if compactor is None:
            return await self._stream(run, request)
        if (done := await compactor.before_call(request)) is not None:
            self._compacted(run, done)
            request = _model_request(run, system)
        try:
            response = await self._stream(run, request)
        except LLMError as exc:
            done = await compactor.after_refusal(request, exc)
            if done is None:
                raise
            self._compacted(run, done)
            request = _model_request(run, system)
            response = await self._stream(run, request)
        compactor.observe(request, response.usage)
        return response

    def _compacted(self, run: _Run, done: Compacted) -> None:
        """Go on from the compacted transcript; count what the summary cost."""
        run.messages[:] = done.messages
        run.tracker.usage = run.tracker.usage + done.usage
        run.cost_usd += done.cost_usd
        run.emit(done)

    async def _stream(self, run: _Run, request: LLMRequest) -> LLMResponse:
        runtime = run.runtime
        partial: list[str] = []
        thought: list[str] = []
        reported: Usage | None = None
        response: LLMResponse | None = None
        try:
            async for event in runtime.client.stream(request):
                match event:
                    case TextDelta(text=text):
                        partial.append(text)
                        run.emit(AssistantTextDelta(text=text))
                    case ThinkingDelta(text=text):
                        thought.append(text)
                        run.emit(AssistantThinkingDelta(text=text))
                    case UsageReported(usage=usage):
                        reported = usage
                    case ToolUseStarted(id=tool_id, name=name):
                        run.emit(ToolCallAnnounced(tool_use_id=tool_id, name=name))
                    case RetryScheduled(attempt=attempt, delay=delay, reason=reason):
                        run.emit(ModelRetrying(attempt=attempt, delay=delay, reason=reason))
                    case StreamRestarted(attempt=attempt, reason=reason):
                        partial.clear()
                        thought.clear()
                        reported = None
                        run.emit(ModelStreamRestarted(attempt=attempt, reason=reason))
                    case ResponseCompleted(response=done):
                        response = done
                    case _:
                        pass
        except asyncio.CancelledError:
            if "".join(partial).strip():
                run.commit(Message(role="assistant", content=(TextBlock(text="".join(partial)),)))
            if response is not None:  # it had completed: its own usage counts, exactly
                self._count_interrupted(run, request, response.usage, "")
            else:
                self._count_interrupted(run, request, reported, "".join(thought + partial))
            raise
        if response is None:
            from aimon_core.llm import LLMStreamError

            raise LLMStreamError("the model stream ended without a complete response")
        run.tracker.usage = run.tracker.usage + response.usage
        cost = call_cost(runtime, response.usage)
        run.cost_usd += cost
        run.emit(AssistantMessageCompleted(
            message=response.message, usage=response.usage, cost_usd=cost
        ))
        return response

    def _count_interrupted(self, run: _Run, request: LLMRequest, reported: Usage | None,
                           streamed: str) -> None:
        """Count what a call interrupted mid-stream spent (`interrupted_usage`)."""
        if (spent := interrupted_usage(request, reported, streamed)) is not None:
            usage, estimated = spent
            run.tracker.usage = run.tracker.usage + usage
            run.cost_usd += call_cost(run.runtime, usage)
            run.usage_estimated = run.usage_estimated or estimated

    async def _run_tools(self, run: _Run, tool_uses: Sequence[ToolUseBlock]) -> str | None:
        """Run a batch of tool calls, commit their results; return a reason to stop, if any."""
        results: dict[str, ToolResultBlock] = {}
        runnable, stop = self._until_repeat(run, tool_uses)
        try:  # (R) interrupted from here on, every call of the batch is answered
            if run.turn.before_changes is not None:
                await run.turn.before_changes  # the project's checkpoint comes first
            for group in _groups(run.runtime, runnable):
                if len(group) > 1:
                    async with asyncio.TaskGroup() as tasks:
                        for use in group:
                            tasks.create_task(self._one_tool(run, use, results))
                else:
                    await self._one_tool(run, group[0], results)
        except asyncio.CancelledError:
            self._commit_results(run, tool_uses, results)
            raise
        for use in tool_uses[len(runnable):]:
            not_run = ToolResult.error(f"Not run: {stop}. Try a different approach.")
            results[use.id] = _result_block(use, not_run)
            run.emit(ToolCallFinished(tool_use_id=use.id, name=use.name, input=use.input,
                                      result=not_run, duration_s=0.0,
                                      label=_label(run, use)))
        self._commit_results(run, tool_uses, results)
        return stop

    def _until_repeat(
        self, run: _Run, tool_uses: Sequence[ToolUseBlock]
    ) -> tuple[Sequence[ToolUseBlock], str | None]:
        """Return the calls before the first one repeated too often, and why it stops."""
        for index, use in enumerate(tool_uses):
            key = use.name + "\0" + json.dumps(use.input, sort_keys=True, default=str)
            run.repeats = run.repeats + 1 if key == run.last_call else 1
            run.last_call = key
            if run.repeats >= REPEAT_LIMIT:
                return tool_uses[:index], (
                    f"the same {use.name} call with the same input was made "
                    f"{run.repeats} times in a row"
                )
        return tool_uses, None

    async def _one_tool(
        self, run: _Run, use: ToolUseBlock, results: dict[str, ToolResultBlock]
    ) -> None:
        label = _label(run, use)
        run.emit(ToolCallStarted(tool_use_id=use.id, name=use.name, input=use.input,
                                 label=label))
        started = time.monotonic()
        try:
            result = await self._checked_run(run, use)
        except FinishedOnInterruptError as done:  # it ran to its end: record what it did
            results[use.id] = _result_block(use, done.result)
            run.emit(ToolCallFinished(tool_use_id=use.id, name=use.name, input=use.input,
                                      result=done.result, label=label,
                                      duration_s=time.monotonic() - started))
            raise
        run.tool_calls += 1
        block = _result_block(use, result)
        if run.request.compactor is not None:
            block = await run.request.compactor.limit_result(block)
        results[use.id] = block
        run.emit(ToolCallFinished(tool_use_id=use.id, name=use.name, input=use.input,
                                  result=result, duration_s=time.monotonic() - started,
                                  label=label))

    async def _checked_run(self, run: _Run, use: ToolUseBlock) -> ToolResult:
        if run.hook_stop is not None:
            return ToolResult.error(f"Not run: {run.hook_stop}")
        try:
            return await self._hooked_run(run, use)
        except HookStopError as exc:
            run.hook_stop = exc.reason
            return ToolResult.error(f"Stopped by a hook: {exc.reason}")

    async def _hooked_run(self, run: _Run, use: ToolUseBlock) -> ToolResult:
        """Schema gate, PreToolUse hooks, permission gate, run, PostToolUse hooks."""
        runtime, ctx, hooks = run.runtime, run.context, run.hooks
        assert hooks is not None
        if use.input_error is not None:
            return ToolResult.error(f"{use.input_error}. The call was not run; send it again "
                                    "with complete, valid JSON arguments.")
        tool = runtime.tools.get(use.name)
        if tool is None:
            known = ", ".join(runtime.tools.names()) or "none"
            return ToolResult.error(f"No tool named {use.name!r}. Available tools: {known}.")
        tool_input: Mapping[str, Any] = use.input
        problem = check_input(tool, tool_input, runtime.schema_gate)
        if problem is not None:
            return ToolResult.error(f"Invalid input for {tool.name}: {problem}. "
                                    "Fix the arguments and call it again.")
        pre = await hooks.pre_tool(use)
        if pre.denied is not None:
            return ToolResult.error(pre.denied + await hooks.permission_denied(use, pre.denied))
        if pre.updated_input is not None:
            tool_input = pre.updated_input
        verdict = await runtime.gate(tool, tool_input, ctx, hint=pre.permission,
                                     tool_use_id=use.id)
        if not verdict.allowed:
            message = verdict.message or f"Permission to use {tool.name} was denied."
            return ToolResult.error(message + await hooks.permission_denied(use, message))
        if verdict.updated_input is not None:  # the person edited the call, then allowed it
            tool_input = verdict.updated_input  # checked again by execute_tool
        started = run.turn.tool_started(use, not (tool.read_only or verdict.read_only))
        if started is not None:
            await started  # recorded before the tool runs (durably, if it may change something)
        output = run.output[use.id] = LiveOutput(ctx.secrets, lambda text: run.emit(
            ToolCallOutput(tool_use_id=use.id, text=text)))
        # Checked above; a hook's updated input is checked by execute_tool.
        call = execute_tool(tool, tool_input, replace(ctx, on_output=output),
                            checked=tool_input is use.input)
        result = await (run_to_end(call) if tool.interrupt is InterruptBehavior.FINISH else call)
        output.flush()
        del run.output[use.id]  # kept only while the call runs (an interruption reads it)
        if verdict.updated_input is not None:
            result = _edited_note(result, tool_input)
        return await hooks.post_tool(use, tool_input, result)

    def _commit_results(
        self, run: _Run, tool_uses: Sequence[ToolUseBlock], results: dict[str, ToolResultBlock]
    ) -> None:
        blocks = tuple(results.get(use.id) or self._unfinished(run, use) for use in tool_uses)
        run.commit(Message(role="user", content=blocks))

    def _unfinished(self, run: _Run, use: ToolUseBlock) -> ToolResultBlock:
        """Answer a call the turn's end cut short, with what it had printed so far."""
        text = INTERRUPTED_RESULT
        if run.tracker.out_of_time():
            text = (f"Stopped: this tool call did not finish; the turn "
                    f"{run.tracker.time_limit_reason()}.")
        if (output := run.output.get(use.id)) is not None:
            output.flush()
            if output.tail:
                text += f"\n\nIts last lines of output:\n{output.tail}"
        return ToolResultBlock(tool_use_id=use.id, content=(TextBlock(text=text),),
                               is_error=True)

    def _answered(self, run: _Run, response: LLMResponse) -> ExecutionResult:
        match response.stop_reason:
            case StopReason.MAX_TOKENS:
                return self._result(run, StopCause.OUTPUT_LIMIT,
                                    "the answer was cut off at the model's output token limit")
            case StopReason.REFUSAL:
                return self._result(run, StopCause.REFUSED, "the model declined to answer")
            case _:
                return self._result(run, StopCause.ANSWERED, "answered")

    def _result(
        self, run: _Run, stop: StopCause, reason: str, error: LLMError | None = None
    ) -> ExecutionResult:
        text = ""
        for message in reversed(run.new_messages):
            if message.role == "assistant" and message.text.strip():
                text = message.text
                break
        return ExecutionResult(
            stop=stop,
            reason=reason,
            text=text,
            new_messages=tuple(run.new_messages),
            usage=run.tracker.usage,
            cost_usd=run.cost_usd,
            iterations=run.tracker.iterations,
            tool_calls=run.tool_calls,
            duration_s=run.tracker.elapsed,
            error=error,
            usage_estimated=run.usage_estimated,
        )

    def _finish(self, run: _Run, stop: StopCause, reason: str) -> None:
        run.emit(ExecutionFinished(result=self._result(run, stop, reason)))


def _model_request(run: _Run, system: str) -> LLMRequest:
    runtime = run.runtime
    return LLMRequest(
        model=runtime.model,
        system=system,
        messages=run.repair(run.messages),
        tools=runtime.tools.definitions(),
        settings=_settings(runtime),
        metadata={"session_id": run.turn.session_id},
    )


def _label(run: _Run, use: ToolUseBlock) -> str:
    """Return the call's one-line form, as its tool describes it (`Read(calc.py)`)."""
    tool = run.runtime.tools.get(use.name)
    return call_label(use.name, use.input, tool.describe if tool is not None else None,
                      run.request.tool_context.project_root)


def _groups(runtime: AgentRuntime, uses: Sequence[ToolUseBlock]) -> list[list[ToolUseBlock]]:
    """Split calls into groups, in order: consecutive read-only calls together, others alone."""
    groups: list[list[ToolUseBlock]] = []
    previous_read_only = False
    for use in uses:
        tool: Tool | None = runtime.tools.get(use.name)
        read_only = tool is not None and tool.read_only and use.input_error is None
        if read_only and previous_read_only and runtime.concurrency is ConcurrencyBehavior.PARALLEL:
            groups[-1].append(use)
        else:
            groups.append([use])
        previous_read_only = read_only
    return groups


def _edited_note(result: ToolResult, tool_input: Mapping[str, Any]) -> ToolResult:
    """Tell the model the call ran as the person edited it."""
    shown = json.dumps(dict(tool_input), ensure_ascii=False, default=str)
    note = f"(The user edited this call before allowing it; it ran with this input: {shown})"
    return replace(result, content=(TextBlock(text=note), *result.content))


def _result_block(use: ToolUseBlock, result: ToolResult) -> ToolResultBlock:
    content = result.content or (TextBlock(text="(no output)"),)
    return ToolResultBlock(tool_use_id=use.id, content=content, is_error=result.is_error)


def _settings(runtime: AgentRuntime) -> ModelSettings:
    model = runtime.agent.model
    base = runtime.settings
    return ModelSettings(
        max_tokens=base.max_tokens or model.max_tokens,
        temperature=base.temperature if base.temperature is not None else model.temperature,
        thinking_budget=base.thinking_budget,
    )

