"""MCP wire values to aimon's: tool names, tool results, resource contents, prompt messages."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from aimon_core.llm import ImageBlock, TextBlock
from aimon_core.shell import SecretPairs, redact
from aimon_core.tools import ToolResult

_BAD_CHARS = re.compile(r"[^A-Za-z0-9_-]")
# Model APIs accept tool names of at most 64 characters from [A-Za-z0-9_-].
_MAX_NAME = 64
# About four characters a token: the default of 25,000 tokens, as Claude Code's.
CHARS_PER_TOKEN = 4


def tool_name(server: str, tool: str) -> str:
    """Return the name the model sees: `mcp__<server>__<tool>`, cut to what model APIs accept."""
    return _BAD_CHARS.sub("_", f"mcp__{server}__{tool}")[:_MAX_NAME]


def prompt_command(server: str, prompt: str) -> str:
    """Return the slash command name of a server prompt: `mcp__<server>__<prompt>`."""
    return _BAD_CHARS.sub("_", f"mcp__{server}__{prompt}").lower()


def call_result(result: Any, *, max_chars: int, secrets: SecretPairs = ()) -> ToolResult:
    """Convert an SDK `CallToolResult`; `isError` becomes an error result for the model.

    `secrets` are redacted from its text (a server may echo the credentials it was given).
    """
    blocks = [block for item in result.content for block in content_blocks(item)]
    structured = result.structured_content
    if structured is not None and secrets:
        structured = json.loads(redact(json.dumps(structured, ensure_ascii=False), secrets))
    if not blocks and structured is not None:
        blocks.append(TextBlock(text=json.dumps(structured, ensure_ascii=False)))
    if not blocks:
        blocks.append(TextBlock(text="(the tool returned no content)"))
    data: dict[str, Any] = {}
    if structured is not None:
        data["structured_content"] = structured
    return ToolResult(content=truncate(redacted(blocks, secrets), max_chars),
                      is_error=bool(result.is_error), data=data)


def redacted(blocks: Iterable[TextBlock | ImageBlock], secrets: SecretPairs
             ) -> tuple[TextBlock | ImageBlock, ...]:
    """Return `blocks` with `secrets` redacted from their text."""
    return tuple(TextBlock(text=redact(b.text, secrets)) if isinstance(b, TextBlock) else b
                 for b in blocks)


def content_blocks(item: Any) -> list[TextBlock | ImageBlock]:
    """Convert one MCP content item (text, image, audio, resource, resource link)."""
    from mcp import types

    match item:
        case types.TextContent():
            return [TextBlock(text=item.text)]
        case types.ImageContent():
            return [ImageBlock(media_type=item.mime_type, data=item.data)]
        case types.AudioContent():
            return [TextBlock(text=f"[audio ({item.mime_type}) omitted]")]
        case types.EmbeddedResource():
            return resource_blocks(item.resource)
        case types.ResourceLink():
            return [TextBlock(text=f"[resource {item.name}: {item.uri}]")]
    return [TextBlock(text=f"[unsupported content {type(item).__name__}]")]


def resource_blocks(contents: Any) -> list[TextBlock | ImageBlock]:
    """Convert resource contents (text, or a blob: images are kept, other blobs described)."""
    from mcp import types

    match contents:
        case types.TextResourceContents():
            return [TextBlock(text=contents.text)]
        case types.BlobResourceContents() if (contents.mime_type or "").startswith("image/"):
            return [ImageBlock(media_type=contents.mime_type or "image/png", data=contents.blob)]
        case types.BlobResourceContents():
            return [TextBlock(text=f"[binary resource {contents.uri} ({contents.mime_type}), "
                                   f"{len(contents.blob) * 3 // 4} bytes]")]
    return []


def truncate(blocks: tuple[TextBlock | ImageBlock, ...], max_chars: int
             ) -> tuple[TextBlock | ImageBlock, ...]:
    """Cut text past `max_chars` (images count as 1,000 characters) and say so."""
    kept: list[TextBlock | ImageBlock] = []
    used = 0
    for block in blocks:
        size = len(block.text) if isinstance(block, TextBlock) else 1000
        if used + size <= max_chars:
            kept.append(block)
            used += size
            continue
        room = max_chars - used
        if isinstance(block, TextBlock) and room > 0:
            kept.append(TextBlock(text=block.text[:room]))
        total = sum(len(b.text) if isinstance(b, TextBlock) else 1000 for b in blocks)
        kept.append(TextBlock(text=(
            f"\n[output truncated: the tool returned about {total // CHARS_PER_TOKEN:,} tokens, "
            f"more than the limit of {max_chars // CHARS_PER_TOKEN:,} (MAX_MCP_OUTPUT_TOKENS). "
            "Ask for less, e.g. with a narrower query or a page/limit argument.]")))
        break
    return tuple(kept)


def prompt_text(result: Any, secrets: SecretPairs = ()) -> str:
    """Join a `GetPromptResult`'s messages into one prompt, `secrets` redacted."""
    parts: list[str] = []
    for message in result.messages:
        for block in content_blocks(message.content):
            if isinstance(block, TextBlock):
                parts.append(block.text)
    return redact("\n\n".join(parts), secrets)
