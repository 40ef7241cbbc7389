"""What the end-to-end tests share: the `aimon` command pointed at a loopback model server.

They talk the OpenAI wire unless a test is about the Anthropic one: `import openai` costs an
`aimon` start about 0.8 CPU-s less than `import anthropic`, and these tests start it often.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.agent import AgentRuntimeId
from aimon_core.llm import Message, TextBlock
from aimon_core.session import (
    FileSessionRecordStore,
    SessionId,
    SessionRecord,
    SessionTranscript,
    project_key,
    user_data_dir,
)
from aimon_core.testing import LoopbackModelServer

AIMON = str(Path(sys.executable).with_name("aimon"))
PROVIDER, MODEL = "openai", "gpt-5.4"
MODEL_ARGS = ("--provider", PROVIDER, "--model", MODEL)
"""The flags that make `aimon` use the server `aimon_env` names."""


def aimon_env(server: LoopbackModelServer, **extra: str) -> dict[str, str]:
    """Return this process's environment with no provider settings but the server's, and
    `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_PROVIDER", "AIMON_MODEL"))}
    env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url, AIMON_NO_LOCAL_PROBE="1")
    env.update(extra)
    return env


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer(provider=PROVIDER) as srv:
        yield srv


def stored_session(project: Path, prompt: str = "make", answer: str = "made") -> SessionId:
    """Store a session of one exchange in `project`, as `aimon -p PROMPT` would leave it,
    without starting `aimon` to make it."""
    messages = (Message.user(prompt), Message(role="assistant", content=(TextBlock(text=answer),)))
    root = str(project.resolve())
    # The default agent's runtime in this project, as `aimon` names it (runtime/_build.py).
    agent_ref = str(AgentRuntimeId.of("default", project_key(root)))
    record = SessionRecord.new(project_root=root, agent_ref=agent_ref)
    record = dataclasses.replace(record, transcript=SessionTranscript(messages=messages))
    FileSessionRecordStore(user_data_dir()).create(record)
    return record.id
