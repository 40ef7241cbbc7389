"""Fixtures of the session storage tests."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from aimon_core.llm import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from aimon_core.session import (
    FileSessionRecordStore,
    MemorySessionRecordStore,
    SessionRecordStore,
)


class FakeClock:
    """A clock that moves one second forward every time it is read."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def project(tmp_path: Path) -> str:
    root = tmp_path / "work" / "my.repo"
    root.mkdir(parents=True)
    return str(root)


StoreMaker = Callable[[], SessionRecordStore]


@pytest.fixture(params=["memory", "file"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> StoreMaker:
    """Make record stores of one kind; file stores made by one test share a directory."""
    if request.param == "memory":
        shared = MemorySessionRecordStore(clock=clock)
        return lambda: shared
    return lambda: FileSessionRecordStore(tmp_path / "data", clock=clock)


@pytest.fixture
def store(make_store: StoreMaker) -> SessionRecordStore:
    return make_store()


@pytest.fixture
def file_store(tmp_path: Path, clock: FakeClock) -> FileSessionRecordStore:
    return FileSessionRecordStore(tmp_path / "data", clock=clock)


@pytest.fixture
def conversation() -> tuple[Message, ...]:
    """Messages holding every kind of content block."""
    return every_block_conversation()


def every_block_conversation() -> tuple[Message, ...]:
    """Messages holding every kind of content block."""
    return (
        Message.user("Fix the failing test in parser.py please"),
        Message(
            role="assistant",
            content=(
                ThinkingBlock(thinking="Look first.", signature="sig=="),
                ThinkingBlock(thinking="", redacted_data="opaque"),
                TextBlock(text="Reading it — ünïcödé, \u2028 and a lone \udce9 survive."),
                ToolUseBlock(id="t1", name="read", input={"path": "parser.py", "n": [1, 2.5]}),
                ToolUseBlock(id="t2", name="bash", input={}, input_error="bad JSON"),
            ),
        ),
        Message(
            role="user",
            content=(
                ToolResultBlock(
                    tool_use_id="t1",
                    content=(
                        TextBlock(text="line 1\nline 2"),
                        ImageBlock(media_type="image/png", data="iVBO"),
                    ),
                ),
                ToolResultBlock(tool_use_id="t2", content=(TextBlock(text="no"),), is_error=True),
                DocumentBlock(media_type="application/pdf", data="JVBE", title="spec"),
                DocumentBlock(media_type="text/plain", data="aGk="),
            ),
        ),
        Message(role="assistant", content=(TextBlock(text="Done."),)),
    )
