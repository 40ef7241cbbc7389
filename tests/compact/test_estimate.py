"""Token estimates, their calibration from usage, windows and the threshold."""

from __future__ import annotations

import pytest

from aimon_core.compact import (
    CompactionSettings,
    TokenCalibration,
    context_window,
    estimate_request_tokens,
    is_prompt_too_long,
    needs_compaction,
    reported_prompt_tokens,
    request_tokens,
    text_tokens,
)
from aimon_core.llm import (
    ImageBlock,
    LLMBadRequestError,
    LLMRateLimitError,
    LLMRequest,
    Message,
    ToolDefinition,
    Usage,
)

TOOL = ToolDefinition(name="Read", description="Read a file.", input_schema={"type": "object"})


def request(text: str, *, system: str = "sys") -> LLMRequest:
    return LLMRequest(model="claude-sonnet-5-5", system=system, messages=(Message.user(text),),
                      tools=(TOOL,))


def test_text_is_about_four_characters_a_token() -> None:
    assert text_tokens("") == 0
    assert text_tokens("abcd") == 1
    assert text_tokens("x" * 4_001) == 1_001


def test_a_request_counts_system_tools_and_messages() -> None:
    small, large = request("x" * 400), request("x" * 4_000)
    assert request_tokens(large) - request_tokens(small) == 900
    assert request_tokens(request("hi", system="s" * 4_000)) > 1_000


def test_an_image_counts_as_a_fixed_cost_not_its_base64_length() -> None:
    image = Message(role="user", content=(ImageBlock(media_type="image/png", data="A" * 10**6),))
    tokens = request_tokens(LLMRequest(model="m", system="", messages=(image,)))
    assert 1_600 <= tokens < 1_700


def test_calibration_learns_the_ratio_from_the_usage_of_the_request_sent() -> None:
    sent = request("x" * 40_000)
    estimate = estimate_request_tokens(sent)
    usage = Usage(input_tokens=100, cache_read_tokens=estimate, cache_write_tokens=estimate // 5)
    calibration = TokenCalibration().observe(estimated=estimate, usage=usage)
    assert calibration.ratio == pytest.approx((estimate * 1.2 + 100) / estimate, rel=1e-3)
    assert estimate_request_tokens(sent, calibration) == pytest.approx(estimate * 1.2 + 100, 2)


def test_calibration_ignores_empty_usage_and_clamps_absurd_ratios() -> None:
    start = TokenCalibration(ratio=1.3)
    assert start.observe(estimated=1_000, usage=Usage()) is start
    assert start.observe(estimated=0, usage=Usage(input_tokens=5)) is start
    assert start.observe(estimated=10, usage=Usage(input_tokens=10_000)).ratio == 4.0
    assert start.observe(estimated=10_000, usage=Usage(input_tokens=1)).ratio == 0.25


def test_the_threshold_is_a_share_of_the_window_after_calibration() -> None:
    sent = request("x" * 4 * 790)  # about 800 tokens with the system prompt and the tool
    tokens = estimate_request_tokens(sent)
    settings = CompactionSettings(threshold=0.8)
    assert not needs_compaction(sent, window=tokens * 2, settings=settings)
    assert needs_compaction(sent, window=tokens, settings=settings)
    doubled = TokenCalibration(ratio=2.0)
    assert needs_compaction(sent, window=tokens * 2, settings=settings, calibration=doubled)


def test_the_window_comes_from_the_registry_or_the_settings() -> None:
    settings = CompactionSettings(unknown_window=100_000)
    assert context_window("claude-sonnet-5-5", "anthropic", settings) >= 200_000
    assert context_window("my-local-llama", "openai", settings) == 100_000
    assert context_window("my-local-llama", None, CompactionSettings()) == 32_768
    pinned = CompactionSettings(window_override=50_000)
    assert context_window("claude-sonnet-5-5", "anthropic", pinned) == 50_000


@pytest.mark.parametrize(("threshold", "keep"), [(0.05, 0.0), (1.2, 0.1), (0.8, 0.8)])
def test_settings_refuse_nonsense(threshold: float, keep: float) -> None:
    with pytest.raises(ValueError, match="must be"):
        CompactionSettings(threshold=threshold, keep_recent_share=keep)


def test_prompt_too_long_answers_are_recognised() -> None:
    anthropic = LLMBadRequestError(
        "invalid_request_error: prompt is too long: 208,113 tokens > 200000 maximum",
        provider="anthropic", status=400,
    )
    openai = LLMBadRequestError(
        "This model's maximum context length is 128000 tokens. (context_length_exceeded)",
        provider="openai", status=400,
    )
    assert is_prompt_too_long(anthropic)
    assert is_prompt_too_long(openai)
    assert is_prompt_too_long(LLMBadRequestError("request_too_large", status=413))
    assert is_prompt_too_long(LLMBadRequestError(
        "invalid_request_error: input length and `max_tokens` exceed context limit: "
        "198000 + 32000 > 200000, decrease input length or `max_tokens` and try again",
        status=400,
    ))
    assert not is_prompt_too_long(LLMBadRequestError("tools.0: bad schema", status=400))
    assert not is_prompt_too_long(LLMRateLimitError("too many tokens per minute", status=429))
    assert reported_prompt_tokens(anthropic) == 208_113
    assert reported_prompt_tokens(openai) is None


def test_a_message_counts_what_its_blocks_count_each_kind_alike() -> None:
    """A message counts what its blocks count, each kind alone or among others; a tool call
    counts its arguments' JSON (non-ASCII counted as characters), a result its parts."""
    import json

    from aimon_core.compact._estimate import (
        BLOCK_OVERHEAD,
        MESSAGE_OVERHEAD,
        block_tokens,
        message_tokens,
    )
    from aimon_core.llm import (
        DocumentBlock,
        TextBlock,
        ThinkingBlock,
        ToolResultBlock,
        ToolUseBlock,
    )

    arguments = {"file_path": "/tmp/é.py", "lines": [1, 2.5, None, True], "x": {"y": "z"}}
    call = ToolUseBlock(id="t1", name="Read", input=arguments)
    assert block_tokens(call) == (BLOCK_OVERHEAD + text_tokens("Read")
                                  + text_tokens(json.dumps(arguments, ensure_ascii=False)))
    image = ImageBlock(media_type="image/png", data="AAAA")
    blocks = [TextBlock(text="x" * n) for n in (0, 1, 4, 5, 399)] + [
        call, ToolUseBlock(id="t2", name="", input={}),
        ToolResultBlock(tool_use_id="t1", content=(TextBlock(text="abcde"), image)),
        ToolResultBlock(tool_use_id="t1", content=(), is_error=True), image,
        DocumentBlock(media_type="text/plain", data="QUJD" * 30),
        DocumentBlock(media_type="application/pdf", data="JVBE" * 9_000),
        ThinkingBlock(thinking="hmm" * 7, redacted_data="r" * 9)]
    for count in range(1, len(blocks) + 1):
        content = tuple(blocks[:count])
        message = Message(role="assistant" if count % 2 else "user", content=content)
        expected = MESSAGE_OVERHEAD + sum(map(block_tokens, content))
        assert message_tokens(message) == expected
    result = ToolResultBlock(tool_use_id="t1", content=(TextBlock(text="abcde"), image))
    assert block_tokens(result) == BLOCK_OVERHEAD + (BLOCK_OVERHEAD + 2) + (BLOCK_OVERHEAD + 1_600)
