"""The engine as the executor will drive it: measure before each call, compact between
iterations, calibrate from usage, and recover once from "prompt is too long"."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from aimon_core.compact import (
    SUMMARY_PREAMBLE,
    CompactionSettings,
    TokenCalibration,
    compact,
    context_window,
    estimate_request_tokens,
    is_prompt_too_long,
    needs_compaction,
    overhead_tokens,
)
from aimon_core.llm import (
    LLMBadRequestError,
    LLMError,
    LLMRequest,
    LLMResponse,
    Message,
    ScriptedLLMClient,
    ScriptStep,
    TextBlock,
    ToolResultBlock,
    Usage,
    reply,
    script,
)

SETTINGS = CompactionSettings(window_override=12_000, keep_recent_share=0.2)
SYSTEM = "You are aimon."


def is_summary_call(request: LLMRequest) -> bool:
    return request.metadata.get("purpose") == "compaction"


def results_for(response: LLMResponse) -> Message:
    return Message(role="user", content=tuple(
        ToolResultBlock(tool_use_id=u.id, content=(TextBlock(text="r" * 8_000),))
        for u in response.message.tool_uses
    ))


async def turn(client: ScriptedLLMClient, messages: list[Message]) -> list[str]:
    """A minimal loop wired as the executor should be; returns what happened, in order."""
    window = context_window("local-model", "openai", SETTINGS)
    calibration, log, retried = TokenCalibration(), [], False
    while True:
        request = LLMRequest(model="local-model", system=SYSTEM, messages=tuple(messages))
        if needs_compaction(request, window=window, settings=SETTINGS, calibration=calibration):
            done = await compact(messages, client=client, model="local-model", window=window,
                                 settings=SETTINGS, calibration=calibration,
                                 overhead_tokens=overhead_tokens(SYSTEM, ()))
            messages[:] = done.messages
            log.append("compacted")
            continue
        try:
            response = await client.call(request)
        except LLMError as exc:
            if retried or not is_prompt_too_long(exc):
                log.append("failed")
                return log
            retried = True
            done = await compact(messages, client=client, model="local-model", window=window,
                                 settings=SETTINGS, calibration=calibration)
            messages[:] = done.messages
            log.append("compacted after too long")
            continue
        calibration = calibration.observe(
            estimated=estimate_request_tokens(request), usage=response.usage
        )
        messages.append(response.message)
        if not response.message.tool_uses:
            log.append("answered")
            return log
        messages.append(results_for(response))
        log.append("tools")


def honest_usage(step: LLMResponse) -> ScriptStep:
    """Answer with usage equal to the estimate of the request (a calibrated provider)."""

    def answer(request: LLMRequest) -> LLMResponse:
        tokens = estimate_request_tokens(request)
        return LLMResponse(id=step.id, model=step.model, content=step.content,
                           stop_reason=step.stop_reason, usage=Usage(input_tokens=tokens))

    return answer


def calls(n: int) -> Sequence[ScriptStep]:
    return [honest_usage(reply("", ("Read", {"file_path": f"/f{i}"}))) for i in range(n)]


def test_a_long_turn_compacts_between_iterations_and_goes_on() -> None:
    client = script(*calls(5), reply("SUMMARY"), *calls(2), honest_usage(reply("done")))
    messages = [Message.user("read everything")]
    log = asyncio.run(turn(client, messages))
    assert log == ["tools"] * 5 + ["compacted"] + ["tools"] * 2 + ["answered"]
    summary_calls = [r for r in client.requests if is_summary_call(r)]
    assert len(summary_calls) == 1
    after = client.requests[client.requests.index(summary_calls[0]) + 1]
    assert after.messages[0].text.startswith(SUMMARY_PREAMBLE)
    assert messages[: len(after.messages)] == list(after.messages)  # it went on from there


def test_prompt_too_long_compacts_once_and_retries_once() -> None:
    too_long = LLMBadRequestError("prompt is too long: 30000 tokens > 12000 maximum", status=400)
    client = script(*calls(2), too_long, reply("SUMMARY"), honest_usage(reply("done")))
    log = asyncio.run(turn(client, [Message.user("go")]))
    assert log == ["tools", "tools", "compacted after too long", "answered"]


def test_a_second_prompt_too_long_is_not_retried() -> None:
    too_long = LLMBadRequestError("prompt is too long: 30000 tokens > 12000 maximum", status=400)
    client = script(*calls(2), too_long, reply("SUMMARY"), too_long)
    log = asyncio.run(turn(client, [Message.user("go")]))
    assert log == ["tools", "tools", "compacted after too long", "failed"]
    assert client.steps == []
