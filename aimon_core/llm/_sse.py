"""Server-sent events as the provider clients read them: raw lines in, JSON objects out.

Both clients let their SDK send the request (auth, base URL, options, HTTP errors) and read
the SSE body here, into their own assemblers, instead of through the SDK's typed event
objects: with Anthropic's SDK those cost ~1.3-2 ms per call and ~8 ms on the first call
(building the pydantic stream adapter), issue 13.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any


class Wire(dict[str, Any]):
    """A JSON object read off the wire; a missing key reads as None (servers differ)."""

    def __getattr__(self, name: str) -> Any:
        return self.get(name)


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """Yield the data of each server-sent event (comment and other fields skipped)."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data:
        yield "\n".join(data)
