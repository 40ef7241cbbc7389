"""Interceptors around executions: the seeds' `AgentExecutionInterceptor` chain.

`InterceptingAgentExecutor` is an `AgentExecutor` that runs each execution through its
interceptors, first outermost, then the executor it wraps. An interceptor is given the
runtime, the request and `proceed`, and may pass on changed values: a runtime whose client or
gate it decorates for this execution, a request whose Turn tells it every event. Tracing is
one interceptor, the cost ledger's per-turn cap another; a library user adds their own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from aimon_core.agent import (
        AgentExecutor,
        AgentRuntime,
        ExecutionRequest,
        ExecutionResult,
        Turn,
    )

ExecutionProceed = Callable[["AgentRuntime", "ExecutionRequest"], Awaitable["ExecutionResult"]]
"""The rest of the chain: run the execution with these (maybe changed) values."""


class ExecutionInterceptor(Protocol):
    """Runs around every execution an `InterceptingAgentExecutor` runs."""

    async def around_execution(self, runtime: AgentRuntime, request: ExecutionRequest,
                               proceed: ExecutionProceed) -> ExecutionResult:
        """Return `await proceed(runtime, request)`, doing what it must before and after."""
        ...


class InterceptingAgentExecutor:
    """An AgentExecutor that runs each execution through interceptors, then `inner`."""

    def __init__(self, inner: AgentExecutor,
                 interceptors: Sequence[ExecutionInterceptor]) -> None:
        self.inner = inner
        self.interceptors = tuple(interceptors)

    async def execute(self, runtime: AgentRuntime, request: ExecutionRequest) -> ExecutionResult:
        """Run the execution through the chain and return how it ended."""
        proceed: ExecutionProceed = self.inner.execute
        for interceptor in reversed(self.interceptors):
            proceed = _link(interceptor, proceed)
        return await proceed(runtime, request)


def _link(interceptor: ExecutionInterceptor, proceed: ExecutionProceed) -> ExecutionProceed:
    async def run(runtime: AgentRuntime, request: ExecutionRequest) -> ExecutionResult:
        return await interceptor.around_execution(runtime, request, proceed)

    return run


def execution_kind(turn: Turn) -> str:
    """Say what an execution is: a session's "turn", a "fork" started inside one (a subagent
    or a forked skill: an `exec-…` id on the session), or an "execution" of no session."""
    if not turn.execution_id.startswith("exec-"):
        return "turn"
    return "fork" if turn.session_id else "execution"
