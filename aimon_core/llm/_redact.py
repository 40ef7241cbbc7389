"""RedactingClient: the last wall, where every request leaves aimon.

Whatever route a credential took into a conversation — a tool result, a hook's context, an
attached resource, an instruction file the system prompt quotes, a tool description — the
model is sent `[REDACTED:NAME]` in its place. Each route redacts on its own first (so that
nothing is stored or shown either); this client is what holds when one of them is missed.

It scans only what is new: a request that extends the previous one (the usual next iteration)
costs a comparison of the old messages by identity and a scan of the new ones, and messages it
has seen keep their identity, so the provider clients' per-message encoding caches still hit.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from aimon_core.llm._client import LLMClient
from aimon_core.llm._messages import (
    ContentBlock,
    DocumentBlock,
    LLMRequest,
    LLMResponse,
    Message,
    StreamEvent,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)
from aimon_core.shell import SecretPairs, redact

SecretSource = Callable[[], SecretPairs]
"""Returns the credentials to redact now (settings reloads may change them)."""


def redact_value(value: Any, secrets: SecretPairs) -> Any:
    """Return `value` (JSON-like) with `secrets` redacted from its strings; itself if clean."""
    match value:
        case str():
            return redact(value, secrets)
        case list() | tuple():
            items = [redact_value(item, secrets) for item in value]
            same = all(a is b for a, b in zip(items, value, strict=True))
            return value if same else type(value)(items)
        case Mapping():
            pairs = {key: redact_value(item, secrets) for key, item in value.items()}
            return value if all(pairs[k] is v for k, v in value.items()) else pairs
        case _:
            return value


def _text(block: TextBlock, secrets: SecretPairs) -> TextBlock:
    text = redact(block.text, secrets)
    return block if text is block.text else TextBlock(text=text)


def _document(block: DocumentBlock, secrets: SecretPairs) -> DocumentBlock:
    if not block.media_type.startswith("text/"):
        return block  # a PDF's words are not plain bytes; nothing to compare with
    try:
        text = base64.b64decode(block.data, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return block
    clean = redact(text, secrets)
    if clean is text:
        return block
    return replace(block, data=base64.b64encode(clean.encode()).decode("ascii"))


def redact_block(block: ContentBlock, secrets: SecretPairs) -> ContentBlock:
    """Return `block` with `secrets` redacted; the same object when it holds none.

    Thinking blocks are sent as they came: their signature covers their text, and the model
    wrote them from requests that were redacted already.
    """
    match block:
        case TextBlock():
            return _text(block, secrets)
        case ToolResultBlock(content=content):
            parts = tuple(_text(p, secrets) if isinstance(p, TextBlock) else p for p in content)
            same = all(a is b for a, b in zip(parts, content, strict=True))
            return block if same else replace(block, content=parts)
        case ToolUseBlock(input=tool_input):
            cleaned = redact_value(tool_input, secrets)
            return block if cleaned is tool_input else replace(block, input=cleaned)
        case DocumentBlock():
            return _document(block, secrets)
        case _:
            return block


def redact_message(message: Message, secrets: SecretPairs) -> Message:
    """Return `message` with `secrets` redacted; the same object when it holds none."""
    content = tuple(redact_block(block, secrets) for block in message.content)
    if all(a is b for a, b in zip(content, message.content, strict=True)):
        return message
    return Message(role=message.role, content=content)


class RedactingClient:
    """An LLMClient that redacts known credentials from every request before the inner one
    sends it: the system prompt, every message, and the tool definitions."""

    def __init__(self, inner: LLMClient, secrets: SecretSource) -> None:
        self.inner = inner
        self._source = secrets
        self._secrets: SecretPairs = ()
        # The previous request's messages as given and as sent (the same tuple when none held
        # a secret): the next request usually extends it.
        self._given: tuple[Message, ...] = ()
        self._sent: tuple[Message, ...] = ()
        # Messages seen, by identity (the message is kept, so its id stays its own).
        self._seen: dict[int, tuple[Message, Message]] = {}
        self._system = ("", "")
        # Tool definitions by (name, description, schema identity): None when clean.
        self._tools: dict[tuple[str, str, int], tuple[Any, ToolDefinition | None]] = {}

    @property
    def provider(self) -> str:
        """Return the wrapped client's provider."""
        return self.inner.provider

    def around(self, inner: LLMClient, extra: SecretPairs = ()) -> RedactingClient:
        """Return a client that redacts the same secrets, and `extra`, around `inner` (another
        account's client: its key is a secret too)."""
        from aimon_core.shell import merge_secrets

        source = self._source
        return RedactingClient(inner, lambda: merge_secrets(source(), extra))

    async def call(self, request: LLMRequest) -> LLMResponse:
        """Send the redacted request through the inner client."""
        return await self.inner.call(self.redact_request(request))

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Stream the redacted request through the inner client."""
        return self.inner.stream(self.redact_request(request))

    async def aclose(self) -> None:
        """Close the inner client."""
        await self.inner.aclose()

    def redact_request(self, request: LLMRequest) -> LLMRequest:
        """Return `request` with the current secrets redacted (itself when it holds none)."""
        secrets = self._source()
        if not secrets:
            return request
        if secrets is not self._secrets and secrets != self._secrets:
            self._secrets = secrets  # what was clean may not be any more: forget it all
            self._given = self._sent = ()
            self._seen, self._system, self._tools = {}, ("", ""), {}
        system = self._system_prompt(request.system)
        messages = self._messages(request.messages)
        tools = tuple(self._tool(definition) for definition in request.tools)
        if (system is request.system and messages is request.messages
                and all(a is b for a, b in zip(tools, request.tools, strict=True))):
            return request
        return replace(request, system=system, messages=messages, tools=tools)

    def _system_prompt(self, system: str) -> str:
        if system != self._system[0]:
            self._system = (system, redact(system, self._secrets))
        return self._system[1]

    def _messages(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        given = tuple(messages)
        count = len(self._given)
        if count and len(given) >= count and given[:count] == self._given:
            new = given[count:]
            sent_new = tuple(self._message(m) for m in new)
            if self._sent is self._given and _same(sent_new, new):
                sent = given  # nothing held a secret, still
            else:
                sent = self._sent + sent_new
        else:
            sent = tuple(self._message(m) for m in given)
            sent = given if _same(sent, given) else sent
        if len(self._seen) > 2 * len(given) + 1_000:  # forget conversations that moved on
            self._seen = {id(a): (a, b) for a, b in zip(given, sent, strict=True)}
        self._given, self._sent = given, sent
        return sent

    def _message(self, message: Message) -> Message:
        seen = self._seen.get(id(message))
        if seen is not None and seen[0] is message:
            return seen[1]
        sent = redact_message(message, self._secrets)
        self._seen[id(message)] = (message, sent)
        return sent

    def _tool(self, definition: ToolDefinition) -> ToolDefinition:
        schema = definition.input_schema
        key = (definition.name, definition.description, id(schema))
        cached = self._tools.get(key)
        if cached is None or cached[0] is not schema:
            description = redact(definition.description, self._secrets)
            cleaned = redact_value(schema, self._secrets)
            sent = None if description is definition.description and cleaned is schema else \
                replace(definition, description=description, input_schema=cleaned)
            cached = self._tools[key] = (schema, sent)
        return definition if cached[1] is None else cached[1]


def _same(sent: tuple[Message, ...], given: tuple[Message, ...]) -> bool:
    return all(a is b for a, b in zip(sent, given, strict=True))
