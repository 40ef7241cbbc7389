"""The text of recorded wire messages, as a test compares it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_CONTEXT = '<context name="'


def without_context(content: Any) -> Any:
    """Return message content without the context blocks aimon appends to a prompt."""
    if isinstance(content, str):
        cut = content.find("\n\n" + _CONTEXT)
        return content if cut < 0 else content[:cut]
    return [part for part in content if not (
        isinstance(part, Mapping) and str(part.get("text", "")).startswith(_CONTEXT))]


def typed_text(content: Any) -> str:
    """Return the text of message content given as a string or as a list of text parts."""
    if isinstance(content, str):
        return content
    return "".join(part.get("text") or typed_text(part.get("content") or "")
                   for part in content if isinstance(part, Mapping))
