"""Fixtures of the session storage tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aimon_core.llm import (
    Message,
)
from aimon_core.session import (
    FileSessionRecordStore,
    MemorySessionRecordStore,
    SessionRecordStore,
)
from aimon_core.testing import FakeClock, every_block_conversation


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
