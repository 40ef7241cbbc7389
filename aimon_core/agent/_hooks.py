"""The executor's hook points: PRE_TOOL, POST_TOOL(_FAILURE), ON_START, ON_STOP and the rest."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aimon_core.agent._events import AgentEvent, Notice
from aimon_core.hook import (
    HookDispatcher,
    HookEvent,
    HookResult,
    PermissionDecision,
    claude_tool_response,
    feedback_reminder,
)
from aimon_core.llm import TextBlock, ToolUseBlock
from aimon_core.tools import ToolResult

if TYPE_CHECKING:
    from aimon_core.hook import HookEventInput

# Each event's input type is imported where a hook fires (`aimon_core.hook` loads them then):
# a turn without hooks never builds one.


class HookStopError(Exception):
    """A hook said the turn must stop (Claude Code's `"continue": false`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason or "a hook stopped the turn")
        self.reason = reason or "a hook stopped the turn"


@dataclass(frozen=True, slots=True, kw_only=True)
class PreToolOutcome:
    """What PreToolUse hooks decided about one call."""

    denied: str | None = None
    permission: PermissionDecision | None = None
    updated_input: Mapping[str, Any] | None = None


class TurnHooks:
    """Fires the executor's hook events through the session's dispatcher; reports notes."""

    def __init__(self, dispatcher: HookDispatcher | None,
                 emit: Callable[[AgentEvent], None]) -> None:
        self._dispatcher = dispatcher
        self._emit = emit
        # PreToolUse hooks' additionalContext, by tool use id, until the call's result.
        self._pre_context: dict[str, str] = {}

    @property
    def dispatcher(self) -> HookDispatcher | None:
        """Return the dispatcher the hooks fire through (the gate fires its own events too)."""
        return self._dispatcher

    def has_start_hooks(self) -> bool:
        """Tell whether UserPromptSubmit hooks will run for this turn."""
        return self._active(HookEvent.ON_START)

    def _active(self, event: HookEvent, subject: str | None = None) -> bool:
        return self._dispatcher is not None and self._dispatcher.active(event, subject)

    async def _dispatch(self, data: HookEventInput) -> HookResult:
        assert self._dispatcher is not None
        result = await self._dispatcher.fire(data)
        for error in result.errors:
            self._emit(Notice(text=f"hook error: {error}", level="warning"))
        if result.system_message:
            self._emit(Notice(text=result.system_message))
        if result.stopped:
            raise HookStopError(result.stop_reason)
        return result

    async def on_start(self, prompt: str) -> tuple[str | None, str]:
        """Return (why the prompt is blocked, or None; context to add for the model)."""
        if not self._active(HookEvent.ON_START):
            return None, ""
        from aimon_core.hook import UserPromptSubmitInput

        result = await self._dispatch(UserPromptSubmitInput(prompt=prompt))
        if result.blocked:
            return result.feedback or "a hook blocked this prompt", ""
        return None, feedback_reminder(result.additional_context)

    async def pre_tool(self, use: ToolUseBlock) -> PreToolOutcome:
        """Ask PreToolUse hooks about a call before the permission check."""
        if not self._active(HookEvent.PRE_TOOL, use.name):
            return PreToolOutcome()
        from aimon_core.hook import PreToolUseInput

        result = await self._dispatch(PreToolUseInput(
            tool_name=use.name, tool_input=dict(use.input), tool_use_id=use.id))
        if result.denied or result.blocked:
            reason = result.feedback or f"a PreToolUse hook blocked {use.name}"
            return PreToolOutcome(denied=f"Blocked by hook: {reason}")
        if result.additional_context:
            self._pre_context[use.id] = result.additional_context
        return PreToolOutcome(permission=result.permission, updated_input=result.updated_input)

    async def post_tool(self, use: ToolUseBlock, tool_input: Mapping[str, Any],
                        result: ToolResult) -> ToolResult:
        """Run PostToolUse (or PostToolUseFailure) hooks after a call that ran.

        Their feedback and context, and a PreToolUse hook's context, join the result.
        """
        extra = [self._pre_context.pop(use.id, "")]
        if result.is_error and self._active(HookEvent.POST_TOOL_FAILURE, use.name):
            from aimon_core.hook import PostToolUseFailureInput

            failed = await self._dispatch(PostToolUseFailureInput(
                tool_name=use.name, tool_input=dict(tool_input), tool_use_id=use.id,
                error=result.text, is_interrupt=bool(result.data.get("interrupted", False))))
            extra += [failed.feedback, failed.additional_context]
        elif not result.is_error and self._active(HookEvent.POST_TOOL, use.name):
            from aimon_core.hook import PostToolUseInput

            response = claude_tool_response(use.name, tool_input, result.text, result.data)
            hooked = await self._dispatch(PostToolUseInput(
                tool_name=use.name, tool_input=dict(tool_input), tool_use_id=use.id,
                tool_response=response))
            extra += [hooked.feedback, hooked.additional_context]
        text = "\n".join(t for t in extra if t)
        if not text:
            return result
        return replace(result, content=(*result.content, TextBlock(text=feedback_reminder(text))))

    async def permission_denied(self, use: ToolUseBlock, reason: str) -> str:
        """Tell PermissionDenied hooks; return context they add to the denial."""
        if not self._active(HookEvent.PERMISSION_DENIED, use.name):
            return ""
        from aimon_core.hook import PermissionDeniedInput

        result = await self._dispatch(PermissionDeniedInput(
            tool_name=use.name, tool_input=dict(use.input), tool_use_id=use.id, reason=reason))
        return feedback_reminder(result.additional_context)

    async def on_stop(self, last_message: str, active: bool) -> str | None:
        """Run Stop hooks; return feedback when one insists the agent goes on."""
        if not self._active(HookEvent.ON_STOP):
            return None
        from aimon_core.hook import StopInput

        result = await self._dispatch(StopInput(stop_hook_active=active,
                                                last_assistant_message=last_message))
        if result.blocked:
            return feedback_reminder(result.feedback or "a Stop hook asked you to continue")
        return None
