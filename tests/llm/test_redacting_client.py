"""RedactingClient: no known credential leaves aimon in a request, wherever it sits in it."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import replace
from typing import Any

import pytest

from aimon_core.llm import (
    DocumentBlock,
    LLMRequest,
    Message,
    RedactingClient,
    ScriptedLLMClient,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    collect,
    reply,
)
from aimon_core.shell import SecretPairs

SECRETS: SecretPairs = (
    ("DATABASE_URL", "postgres://app:pw-4e5f6a7b8c@db/app"),
    ("GITHUB_TOKEN", "ghp_" + "Wall0fRedaction" * 3),
    ("ANTHROPIC_API_KEY", "sk-ant-api03-" + "NeverSent" * 4),
    ("PASSWORD_PART", "pw-4e5f6a7b8c"),
)


def where(value: str) -> dict[str, LLMRequest]:
    """Return one request per place a credential can sit in one, each holding `value`."""
    base = LLMRequest(model="m", system="You help.", messages=(Message.user("hi"),))
    doc = base64.b64encode(f"notes: {value}".encode()).decode()
    tool = ToolDefinition(name="t", description="A tool.", input_schema={"type": "object"})
    places: dict[str, LLMRequest] = {
        "system prompt": replace(base, system=f"Project instructions: {value}"),
        "user text": replace(base, messages=(Message.user(f"use {value}"),)),
        "hook context block": replace(base, messages=(Message(role="user", content=(
            TextBlock(text="hi"),
            TextBlock(text=f"<system-reminder>{value}</system-reminder>"))),)),
        "tool call input": replace(base, messages=(
            Message.user("hi"),
            Message(role="assistant", content=(ToolUseBlock(
                id="c1", name="Bash", input={"command": f"echo {value}",
                                             "nested": [{"deep": value}]}),)),
            Message(role="user", content=(ToolResultBlock(
                tool_use_id="c1", content=(TextBlock(text="ok"),)),)))),
        "tool result": replace(base, messages=(
            Message.user("hi"),
            Message(role="assistant", content=(ToolUseBlock(id="c1", name="Bash",
                                                            input={"command": "env"}),)),
            Message(role="user", content=(ToolResultBlock(
                tool_use_id="c1", content=(TextBlock(text=f"TOKEN={value}"),)),)))),
        "text document": replace(base, messages=(Message(role="user", content=(
            TextBlock(text="read this"), DocumentBlock(media_type="text/plain", data=doc))),)),
        "tool description": replace(base, tools=(replace(tool, description=f"Uses {value}."),)),
        "tool schema": replace(base, tools=(replace(tool, input_schema={
            "type": "object", "properties": {"k": {"type": "string", "default": value}}}),)),
    }
    return places


def sent(request: LLMRequest, secrets: SecretPairs = SECRETS, *, stream: bool = False
         ) -> LLMRequest:
    """Return what the inner client received for `request`."""
    inner = ScriptedLLMClient(steps=[reply("ok")])
    client = RedactingClient(inner, lambda: secrets)
    if stream:
        asyncio.run(collect(client.stream(request)))
    else:
        asyncio.run(client.call(request))
    return inner.requests[0]


def wire(request: LLMRequest) -> str:
    """Return every string of a request, documents decoded, as one text."""
    parts = [request.system]
    for message in request.messages:
        for block in message.content:
            match block:
                case DocumentBlock(data=data):
                    parts.append(base64.b64decode(data).decode())
                case _:
                    parts.append(repr(block))
    parts += [repr(tool) for tool in request.tools]
    return "\n".join(parts)


@pytest.mark.parametrize("stream", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("name", [name for name, _ in SECRETS[:3]])
@pytest.mark.parametrize("place", list(where("x")))
def test_a_credential_is_redacted_wherever_it_sits(place: str, name: str, stream: bool) -> None:
    value = dict(SECRETS)[name]
    text = wire(sent(where(value)[place], stream=stream))
    assert value not in text
    assert f"[REDACTED:{name}]" in text


def test_a_clean_request_goes_as_it_is() -> None:
    request = where("nothing secret")["tool result"]
    assert sent(request) is request


def test_thinking_is_sent_as_it_came() -> None:
    thought = ThinkingBlock(thinking="secret-free reasoning", signature="sig")
    request = LLMRequest(model="m", system="s", messages=(
        Message.user("hi"), Message(role="assistant", content=(thought, TextBlock(text="ok"))),
        Message.user("more")))
    assert sent(request).messages[1].content[0] is thought


def conversation(length: int, secret_at: int | None = None) -> list[Message]:
    messages = [Message.user("start")]
    for index in range(length):
        text = f"result {index}" + (f" {SECRETS[1][1]}" if index == secret_at else "")
        messages += [
            Message(role="assistant", content=(ToolUseBlock(id=f"c{index}", name="Read",
                                                            input={"file_path": f"{index}"}),)),
            Message(role="user", content=(ToolResultBlock(tool_use_id=f"c{index}",
                                                          content=(TextBlock(text=text),)),))]
    return messages


class Recorder:
    """A scripted inner client that answers every call."""

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []
        self.provider = "recorder"

    async def call(self, request: LLMRequest) -> Any:
        self.requests.append(request)
        return reply("ok")

    async def stream(self, request: LLMRequest) -> Any:
        self.requests.append(request)
        yield  # pragma: no cover - not used

    async def aclose(self) -> None:
        return None


def calls(client: RedactingClient, *histories: list[Message]) -> list[tuple[Message, ...]]:
    for history in histories:
        asyncio.run(client.call(LLMRequest(model="m", system="s", messages=tuple(history))))
    assert isinstance(client.inner, Recorder)
    return [request.messages for request in client.inner.requests]


def test_a_growing_conversation_keeps_each_message_s_identity() -> None:
    history = conversation(30, secret_at=3)
    client = RedactingClient(Recorder(), lambda: SECRETS)  # type: ignore[arg-type]
    first, second = calls(client, history[:41], history)
    assert SECRETS[1][1] not in repr(second)
    # The redacted message is the same object in both requests; clean ones are the caller's.
    assert second[8] is first[8] and second[8] is not history[8]
    assert all(second[i] is history[i] for i in range(len(history)) if i != 8)


def test_a_message_replaced_inside_the_history_is_still_redacted() -> None:
    history = conversation(10)
    client = RedactingClient(Recorder(), lambda: SECRETS)  # type: ignore[arg-type]
    changed = list(history)
    changed[5] = conversation(10, secret_at=2)[5]  # same length, a secret in the middle
    _, second = calls(client, history, changed)
    assert SECRETS[1][1] not in repr(second)


def test_new_secrets_apply_to_messages_seen_before() -> None:
    value = "tok-" + "reloaded" * 3
    current: list[SecretPairs] = [()]
    history = [Message.user(f"value {value}")]
    client = RedactingClient(Recorder(), lambda: current[0])  # type: ignore[arg-type]
    current[0] = (("A_TOKEN", "something-else-123"),)
    calls(client, history)
    current[0] = (("NEW_TOKEN", value),)  # the settings were reloaded
    _, second = calls(client, history)
    assert value not in repr(second)


def test_the_json_of_a_redacted_request_has_no_secret() -> None:
    request = where(SECRETS[0][1])["tool call input"]
    body = json.dumps([block.input for block in sent(request).messages[1].content
                       if isinstance(block, ToolUseBlock)])
    assert SECRETS[0][1] not in body and SECRETS[3][1] not in body
