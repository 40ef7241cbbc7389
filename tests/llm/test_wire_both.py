"""What both wires' body encoders and clients promise alike, each test run on each provider."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from aimon_core.llm import (
    AnthropicClient,
    LLMClient,
    LLMRequest,
    Message,
    ModelSettings,
    OpenAIClient,
    ToolDefinition,
    collect,
    model_info,
)
from aimon_core.llm._anthropic import _BodyEncoder as AnthropicBody
from aimon_core.llm._models import ModelInfo
from aimon_core.llm._openai import _BodyEncoder as OpenAIBody
from aimon_core.testing import LoopbackModelServer, Reply
from tests.llm import test_anthropic_wire as anthropic_wire
from tests.llm import test_openai_wire as openai_wire


@dataclass(frozen=True)
class Wire:
    """One provider's encoder, what its body must equal, and a client on a loopback server."""

    name: str
    model: str
    other_model: str
    tools: tuple[ToolDefinition, ...]
    info: ModelInfo
    encoder: Callable[[], AnthropicBody | OpenAIBody]
    expected: Callable[[LLMRequest], dict[str, Any]]
    turn: Callable[[int], tuple[Message, Message]]
    client: Callable[[LoopbackModelServer], LLMClient]


WIRES = [
    Wire("anthropic", anthropic_wire.MODEL, "claude-haiku-4-5", anthropic_wire.TOOLS,
         model_info(anthropic_wire.MODEL), AnthropicBody, anthropic_wire.expected,
         anthropic_wire.turn,
         lambda s: AnthropicClient(api_key="test-key", base_url=s.base_url, idle_timeout=5.0)),
    Wire("openai", openai_wire.MODEL, "gpt-5.4-mini", openai_wire.TOOLS,
         model_info(openai_wire.MODEL, "openai"), OpenAIBody, openai_wire.expected,
         openai_wire.turn,
         lambda s: OpenAIClient(api_key="test-key", base_url=s.openai_base_url)),
]


@pytest.fixture(params=WIRES, ids=lambda wire: wire.name)
def wire(request: pytest.FixtureRequest) -> Wire:
    return request.param  # type: ignore[no-any-return]


def test_calls_on_one_client_share_one_kept_alive_connection(wire: Wire) -> None:
    request = LLMRequest(model=wire.model, system="s", messages=(Message.user("hi"),))

    async def scenario(server: LoopbackModelServer) -> None:
        client = wire.client(server)
        try:
            for _ in range(3):
                await collect(client.stream(request))
        finally:
            await client.aclose()

    with LoopbackModelServer([Reply(text="one"), Reply(text="two"), Reply(text="three")],
                             provider=wire.name) as server:
        asyncio.run(scenario(server))
    # OpenAI: the body is read to its end after data: [DONE], so the pool keeps it.
    assert len({recorded.connection for recorded in server.requests}) == 1


def test_the_head_follows_every_change_of_system_tools_settings_and_model(wire: Wire) -> None:
    encoder = wire.encoder()
    other_tools = (*wire.tools, ToolDefinition(name="Grep", description="Search.",
                                               input_schema={"type": "object"}))
    messages = (Message.user("fix it"),)
    variants = [
        LLMRequest(model=wire.model, system="You are aimon.", messages=messages,
                   tools=wire.tools),
        LLMRequest(model=wire.model, system="", messages=messages, tools=wire.tools),
        LLMRequest(model=wire.model, system="You are aimon, compacted.", messages=messages,
                   tools=wire.tools),
        LLMRequest(model=wire.model, system="You are aimon.", messages=messages,
                   tools=other_tools),
        LLMRequest(model=wire.model, system="You are aimon.", messages=messages,
                   tools=wire.tools, settings=ModelSettings(max_tokens=77, temperature=0.3)),
        LLMRequest(model=wire.other_model, system="You are aimon.", messages=messages,
                   tools=wire.tools),
    ]
    for request in [*variants, *reversed(variants), variants[0], variants[0]]:
        assert json.loads(encoder.encode(request, wire.info)) == wire.expected(request)


def _reloaded(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """`messages` as the session store reads them back from their lines."""
    from aimon_core.session._codec import MessageLine, line_from_json, line_to_json

    at = datetime(2026, 11, 30, tzinfo=UTC)
    out = []
    for message in messages:
        read = line_from_json(line_to_json(MessageLine(at=at, message=message)))
        assert isinstance(read, MessageLine) and read.message == message
        out.append(read.message)
    return tuple(out)


def test_bodies_stay_exact_across_forks_compactions_and_reloads(wire: Wire) -> None:
    rng = random.Random(7)
    encoder = wire.encoder()
    branches: list[tuple[Message, ...]] = [(Message.user("fix it"),)]
    for step in range(150):
        pick = rng.randrange(len(branches))
        messages = branches[pick]
        roll = rng.random()
        if roll < 0.55:  # the conversation goes on
            messages = (*messages, *wire.turn(step))
        elif roll < 0.7 and len(messages) > 2:  # a fork from an earlier point
            messages = messages[:rng.randrange(1, len(messages))]
            branches.append(messages)
        elif roll < 0.8 and len(messages) > 3:  # compacted: the start is replaced
            messages = (Message.user(f"summary {step}"), *messages[len(messages) // 2:])
        elif roll < 0.85:  # equal messages, other objects (a reload)
            messages = tuple(Message(role=m.role, content=m.content) for m in messages)
        elif roll < 0.9:  # read back from a session file
            messages = _reloaded(messages)
        branches[pick] = messages
        request = LLMRequest(model=wire.model, system="s", messages=messages, tools=wire.tools)
        assert json.loads(encoder.encode(request, wire.info)) == wire.expected(request), step
