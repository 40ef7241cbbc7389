"""Context providers: refreshed at each turn when what they read changed, silent otherwise."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import (
    AgentRuntime,
    ContextBlock,
    Environment,
    allow_all,
    context_update,
    parse_agent,
)
from aimon_core.context import (
    ContextSet,
    DateProvider,
    GitProvider,
    InstructionsProvider,
    JobsProvider,
)
from aimon_core.filesystem import LocalFileSystem
from aimon_core.live import LiveSession, LiveSessionOptions
from aimon_core.llm import Message, TextBlock, reply, script
from aimon_core.session import FileSessionLeaseStore, FileSessionRecordStore, SessionStore
from aimon_core.shell import LocalShell
from aimon_core.tools import ToolContext, ToolRegistry
from aimon_core.tools._state import ToolState

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


def context_for(root: Path) -> ToolContext:
    return ToolContext(project_root=root, cwd=root, fs=LocalFileSystem(root),
                       shell=LocalShell(), state=ToolState())


def blocks_of(message: Message) -> str:
    return "".join(b.text for b in message.content[1:] if isinstance(b, TextBlock))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first commit")
    return root


def test_a_commit_between_turns_shows_and_nothing_else_moves(tmp_path: Path,
                                                              repo: Path) -> None:
    client = script(reply("one"), reply("two"), reply("three"))
    day = dt.date(2026, 12, 1)
    runtime = AgentRuntime(agent=AGENT, client=client, model="scripted", gate=allow_all,
                           tools=ToolRegistry(()),
                           context=ContextSet((GitProvider(), InstructionsProvider(),
                                               DateProvider(today=lambda: day))))
    store = SessionStore(FileSessionRecordStore(tmp_path / "d"),
                         FileSessionLeaseStore(tmp_path / "d"))
    env = Environment(cwd=repo, platform="test", date="2026-12-01")

    async def main() -> None:
        async with await LiveSession.open(runtime, store, context_for(repo),
                                          options=LiveSessionOptions(environment=env)) as live:
            await live.submit("first")
            await live.submit("second")
            (repo / "b.txt").write_text("two\n")
            git(repo, "add", "b.txt")
            git(repo, "commit", "-q", "-m", "second commit")
            await live.submit("third")

    asyncio.run(main())
    first, second, third = client.requests
    assert first.system == second.system == third.system
    assert "Git branch" not in first.system and "Working directory" in first.system
    sent = blocks_of(first.messages[0])
    assert '<context name="git">' in sent and "first commit" in sent
    assert "Today's date: 2026-12-01" in sent
    # Nothing changed: the second request repeats the first, then adds only the new turn.
    assert second.messages[0] == first.messages[0]
    assert second.messages[2] == Message.user("second")
    # The commit: the third turn's message carries the git block again, with it.
    update = blocks_of(third.messages[4])
    assert update.startswith('<context name="git">') and "second commit" in update
    assert "name=\"date\"" not in update and third.messages[:3] == second.messages[:3]


def test_instructions_edited_come_back_with_their_imports(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "style.md").write_text("Use tabs. See @more.md\n")
    (tmp_path / "docs" / "more.md").write_text("Name things well.\n")
    (tmp_path / "AIMON.md").write_text("Rules.\n@docs/style.md\n`@not/this.md` me@x.org\n")
    provider, ctx = InstructionsProvider(), context_for(tmp_path)
    text = provider.read(ctx)
    assert text is not None and "Rules." in text
    assert "Use tabs." in text and "Name things well." in text
    assert "Imported from @not" not in text and "x.org (" not in text
    assert provider.read(ctx) is text  # nothing changed on disk: the cached text
    (tmp_path / "docs" / "more.md").write_text("Name things very well, always.\n")
    again = provider.read(ctx)
    assert again is not None and "very well" in again


def test_an_import_that_leads_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "secret.md"
    outside.write_text("TOP SECRET\n")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "link.md").symlink_to(outside)
    (root / "AIMON.md").write_text("@../secret.md\n@link.md\n")
    text = InstructionsProvider().read(context_for(root))
    assert text is not None and "TOP SECRET" not in text


def test_git_runs_nothing_in_a_repository_whose_config_could(repo: Path) -> None:
    marker = repo.parent / "ran"
    with (repo / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = touch {marker}\n")
    text = GitProvider().read(context_for(repo))
    assert text is not None and "Git branch: main" in text and "unknown" in text
    assert not marker.exists()


def test_jobs_are_listed_while_they_run(tmp_path: Path) -> None:
    ctx = context_for(tmp_path)
    assert JobsProvider().read(ctx) is None
    assert isinstance(ctx.shell, LocalShell)
    shell = ctx.shell

    async def main() -> None:
        shell_id = await shell.start_background("sleep 30", cwd=tmp_path, sandbox=False)
        try:
            text = JobsProvider().read(ctx)
            assert text is not None and f"{shell_id}: sleep 30" in text
        finally:
            await shell.close()

    asyncio.run(main())


def test_blocks_are_capped_and_a_provider_that_stops_says_so() -> None:
    big = ContextBlock(name="big", text="x" * 500)
    update = context_update([big], [], cap=300)
    assert update is not None and len(update.text) < 400 and "cut here" in update.text
    history = [Message(role="user", content=(TextBlock(text="hi"),
                                             context_update([ContextBlock(name="jobs",
                                                                          text="job")], [])
                                             or TextBlock(text="")))]
    gone = context_update([], history)
    assert gone is not None and '<context name="jobs">\n(nothing now)' in gone.text
    assert context_update([ContextBlock(name="jobs", text="job")], history) is None


def test_a_failing_provider_costs_its_block_only(tmp_path: Path) -> None:
    class Broken:
        name = "broken"

        def read(self, ctx: ToolContext) -> str | None:
            raise RuntimeError("boom")

    blocks = asyncio.run(ContextSet([Broken(), DateProvider()]).blocks(context_for(tmp_path)))
    assert [b.name for b in blocks] == ["date"]


def test_the_session_title_is_what_the_user_typed() -> None:
    from aimon_core.session import title_from

    block = context_update([ContextBlock(name="git", text="Git branch: main")], [])
    assert block is not None
    assert title_from([Message(role="user", content=(TextBlock(text="fix it"), block))]) == \
        "fix it"


def test_background_subagents_are_listed_while_they_run() -> None:
    from aimon_core.context import CallableProvider
    from aimon_core.runtime._background import BackgroundTasks

    async def main() -> tuple[str | None, str | None]:
        tasks = BackgroundTasks()
        provider = CallableProvider("tasks", lambda ctx: tasks.running_text())
        gate = asyncio.Event()

        async def work() -> Any:
            await gate.wait()

        entry = tasks.add("explorer", "map the parser", asyncio.create_task(work()))
        running = provider.read(context_for(Path("/")))
        gate.set()
        await entry.task
        return running, provider.read(context_for(Path("/")))

    running, done = asyncio.run(main())
    assert running is not None and "task-1 (explorer): map the parser" in running
    assert done is None


def test_front_ends_show_the_prompt_without_the_context_blocks() -> None:
    from aimon_core.acp._updates import replay_updates

    block = context_update([ContextBlock(name="git", text="Git branch: main")], [])
    assert block is not None
    message = Message(role="user", content=(TextBlock(text="fix it"), block))
    assert message.first_text == "fix it"
    shown = [repr(u) for u in replay_updates([message])]
    assert len(shown) == 1 and "fix it" in shown[0] and "context" not in shown[0]
