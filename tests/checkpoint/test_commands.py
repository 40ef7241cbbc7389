"""/undo, /rewind and /diff over a real runtime: Edit, Write and Bash in a scratch project.

The model is scripted; the tools, the files and git are real. Print-mode hosts confirm by
the command itself being typed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.agent import ApprovalAnswer, ApprovalRequested, ApprovalScope, StopCause
from aimon_core.live import LiveSession, LiveSessionEvent, SessionCommandHost
from aimon_core.llm import ScriptedLLMClient, reply, script
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import FileSessionLeaseStore, FileSessionRecordStore, SessionStore
from tests.checkpoint.conftest import git_state, make_git_repo, make_project, tree_state


def file_store(tmp_path: Path) -> SessionStore:
    base = tmp_path / "data"
    return SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))


def assemble(root: Path, client: ScriptedLLMClient) -> AgentAssembly:
    return build_runtime(root, flags=RuntimeFlags(), parts=RuntimeParts(client=client))


async def open_allowing(assembly: AgentAssembly, store: SessionStore,
                        session_id: str | None = None) -> LiveSession:
    """Open a session whose every approval question is answered yes."""
    live = await assembly.open_session(store, session_id=session_id)

    def allow(event: LiveSessionEvent) -> None:
        if isinstance(event, ApprovalRequested):
            live.answer(event.request.id,
                        ApprovalAnswer(allowed=True, scope=ApprovalScope.TURN))

    live.subscribe(allow, answers=True)
    return live


def one_turn_of_everything(root: Path) -> list[object]:
    """Edit, Write, then a Bash `rm -rf src`, `sed -i` and chmod, in one turn."""
    a = str(root / "src" / "a.py")
    return [
        reply("", ("Read", {"file_path": a})),
        reply("", ("Edit", {"file_path": a, "old_string": "'hello'", "new_string": "'bye'"}),
              ("Write", {"file_path": str(root / "added.py"), "content": "NEW = 1\n"})),
        reply("", ("Bash", {"command": "rm -rf src && sed -i 's/hello/bye/' notes.txt "
                                       "&& chmod 600 run.sh && rm secret.txt"})),
        reply("all done"),
    ]


@pytest.mark.parametrize("with_git", [False, True], ids=["plain folder", "git repository"])
def test_undo_takes_back_edit_write_and_bash_byte_for_byte(tmp_path: Path,
                                                           with_git: bool) -> None:
    root = make_project(tmp_path / "proj")
    if with_git:
        make_git_repo(root)
    before = tree_state(root)
    git_before = git_state(root) if with_git else {}
    client = script(*one_turn_of_everything(root))

    async def main() -> tuple[str, str]:
        assembly = await asyncio.to_thread(assemble, root, client)
        live = await open_allowing(assembly, file_store(tmp_path))
        try:
            assert (await live.submit("change everything")).text == "all done"
            assert not (root / "src").exists()
            assert (root / "notes.txt").read_text().startswith("bye")
            diff = await live.submit("/diff")
            undone = await live.submit("/undo")
            return diff.text, undone.text
        finally:
            await live.close()
            await assembly.aclose()

    diff, undone = asyncio.run(main())
    assert "deleted src/a.py" in diff and "-    return 'hello'" in diff
    assert "added added.py" in diff and "changed run.sh (mode)" in diff
    assert undone.startswith("Restored the files as they were before prompt 1")
    assert tree_state(root) == before
    if with_git:
        assert git_state(root) == git_before


def five_prompts(root: Path) -> list[object]:
    steps: list[object] = []
    for n in range(1, 6):
        steps += [reply("", ("Bash", {"command": f"echo {n} > step.txt"})), reply(f"did {n}")]
    return steps


def test_rewind_to_the_second_of_five_prompts(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    client = script(*five_prompts(root))
    store = file_store(tmp_path)

    async def main() -> dict[str, object]:
        assembly = await asyncio.to_thread(assemble, root, client)
        live = await open_allowing(assembly, store)
        seen: dict[str, object] = {}
        try:
            for n in range(1, 6):
                await live.submit(f"prompt number {n}")
            seen["listing"] = (await live.submit("/rewind")).text
            seen["code"] = (await live.submit("/rewind 2 code")).text
            seen["after code"] = (root / "step.txt").read_text()
            (root / "step.txt").write_text("mine\n")  # the user's edit after the checkpoint
            (root / "other.txt").write_text("also mine\n")
            conversation = await live.submit("/rewind 3 conversation")
            seen["conversation"] = conversation.text
            seen["both"] = (await live.submit("/rewind 2 both")).text
            seen["messages"] = len(live.record.transcript.messages)
            seen["id"] = live.id
        finally:
            await live.close()
            await assembly.aclose()
        return seen

    seen = asyncio.run(main())
    assert "    2. 'prompt number 2'" in str(seen["listing"])
    assert "since then: 1 changed (+1 -1)" in str(seen["listing"])
    assert "    1. 'prompt number 1'" in str(seen["listing"])
    assert seen["after code"] == "1\n"  # before prompt 2 ran, step 1 had written "1"
    assert "continues in session" in str(seen["conversation"])
    both = str(seen["both"])
    assert "Restored the files as they were before prompt 2" in both
    assert "continues in session" in both
    assert (root / "step.txt").read_text() == "1\n"
    assert not (root / "other.txt").exists()
    forks = [s for s in store.records.list_sessions(str(root.resolve()), 10) if s.id != seen["id"]]
    assert {f.message_count for f in forks} == {4, 8}  # before prompt 2 and before prompt 3
    old = store.records.load(seen["id"])  # type: ignore[arg-type]
    assert len(old.transcript.messages) == 20  # the old branch stays whole


def test_a_restore_names_files_changed_outside_aimon(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    client = script(reply("", ("Bash", {"command": "echo agent > notes.txt"})), reply("ok"))
    asked: list[str] = []

    async def main() -> str:
        assembly = await asyncio.to_thread(assemble, root, client)
        live = await open_allowing(assembly, file_store(tmp_path))

        class AskingHost(SessionCommandHost):
            """A host with someone to ask (as the REPL's), who says yes."""

            async def confirm(self, question: str, details: str) -> bool:
                asked.append(question)
                return True

        assert assembly.commands is not None
        try:
            await live.submit("write notes")
            (root / "src" / "a.py").write_text("the user's own edit\n")
            outcome = await assembly.commands.run(
                "/undo", AskingHost(live, assembly.commands, assembly))
            return outcome.text
        finally:
            await live.close()
            await assembly.aclose()

    text = asyncio.run(main())
    assert "This overwrites changes made outside aimon: src/a.py." in asked[0]
    assert "notes.txt" not in asked[0].split("outside aimon")[1]
    assert text.startswith("Restored")
    assert (root / "src" / "a.py").read_text().startswith("def hello")


def test_checkpoints_survive_resume_and_undo_walks_back(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    client = script(reply("", ("Bash", {"command": "echo one > notes.txt"})), reply("1"),
                    reply("", ("Bash", {"command": "echo two > notes.txt"})), reply("2"))
    store = file_store(tmp_path)
    original = (root / "notes.txt").read_text()

    async def main() -> list[str]:
        assembly = await asyncio.to_thread(assemble, root, client)
        live = await open_allowing(assembly, store)
        await live.submit("first")
        await live.submit("second")
        session_id = live.id
        await live.close()
        again = await open_allowing(assembly, store, session_id)
        try:
            first = await again.submit("/undo")
            after_first = (root / "notes.txt").read_text()
            second = await again.submit("/undo")
            return [first.text, after_first, second.text]
        finally:
            await again.close()
            await assembly.aclose()

    first, after_first, second = asyncio.run(main())
    assert "before prompt 2" in first and after_first == "one\n"
    assert "before prompt 1" in second
    assert (root / "notes.txt").read_text() == original


def test_a_command_result_says_nothing_to_undo_before_any_prompt(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")

    async def main() -> tuple[StopCause, str]:
        assembly = await asyncio.to_thread(assemble, root, script())
        live = await assembly.open_session(file_store(tmp_path))
        try:
            result = await live.submit("/undo")
            return result.stop, result.text
        finally:
            await live.close()
            await assembly.aclose()

    stop, text = asyncio.run(main())
    assert stop is StopCause.COMMAND
    assert text == "Nothing to undo: no prompt has a checkpoint yet."
