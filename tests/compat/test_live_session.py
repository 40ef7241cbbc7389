"""A Claude Code project through the library: the same runtime `aimon` builds, a scripted model.

`.claude/settings.json` is the only configuration. Covers what print mode cannot show:
Notification hooks (an approval waits; idle at the prompt), status messages, hook errors,
PostToolUseFailure, PreToolUse context and custom commands from `.claude/commands/`.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aimon_core.agent import ApprovalAnswer, ApprovalRequested, Notice
from aimon_core.hook import HookEvent, HookInput, HookResult
from aimon_core.live import LiveSession, LiveSessionEvent
from aimon_core.llm import ScriptedLLMClient, ToolResultBlock, reply, script
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore

MakeProject = Callable[[dict[str, Any]], Path]


def hook(script_name: str, **fields: Any) -> dict[str, Any]:
    return {"type": "command", "command": f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{script_name}',
            **fields}


def assemble(root: Path, client: ScriptedLLMClient) -> AgentAssembly:
    return build_runtime(root, flags=RuntimeFlags(), parts=RuntimeParts(client=client))


def memory_store() -> SessionStore:
    return SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())


def results(client: ScriptedLLMClient, index: int = -1) -> list[str]:
    return [block.text for message in client.requests[index].messages
            for block in message.content if isinstance(block, ToolResultBlock)]


def prompt_of(client: ScriptedLLMClient, index: int = 0) -> str:
    return "\n".join(block.text for block in client.requests[index].messages[-1].content
                     if hasattr(block, "text") and isinstance(block.text, str))


def notifications(root: Path) -> list[dict[str, str]]:
    path = root / "notifications.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines]


def test_notification_hooks_fire_when_an_approval_waits_and_when_idle(
        make_project: MakeProject) -> None:
    root = make_project({"hooks": {"Notification": [{"hooks": [hook("notify.sh")]}]}})
    client = script(reply("", ("Bash", {"command": "touch made-by-bash"})), reply("done"))

    async def main() -> None:
        assembly = assemble(root, client)
        idle = asyncio.Event()

        async def on_idle(_: HookInput) -> HookResult:
            idle.set()
            return HookResult()

        assembly.hooks.register(HookEvent.NOTIFICATION, on_idle, matcher="idle_prompt")
        live = await assembly.open_session(memory_store())
        live.claude.idle_after = 0.01

        def answer(event: LiveSessionEvent) -> None:
            if isinstance(event, ApprovalRequested):
                live.answer(event.request.id, ApprovalAnswer(allowed=True))

        live.subscribe(answer, answers=True)
        await live.submit("make a file")
        await idle.wait()
        await live.close()

    asyncio.run(main())
    assert (root / "made-by-bash").exists()
    # The two hooks run beside the session: either may finish first.
    assert sorted(notifications(root), key=lambda n: n["type"], reverse=True) == [
        {"type": "permission_prompt", "message": "aimon needs your permission to use Bash"},
        {"type": "idle_prompt", "message": "aimon is waiting for your input"},
    ]


def test_no_idle_notice_without_someone_at_a_prompt(make_project: MakeProject) -> None:
    root = make_project({"hooks": {"Notification": [{"hooks": [hook("notify.sh")]}]}})
    client = script(reply("hi"))

    async def main() -> None:
        live = await assemble(root, client).open_session(memory_store())
        live.claude.idle_after = 0
        await live.submit("hello")
        await asyncio.sleep(0)  # the timer would have started here; print mode has none
        await live.close()

    asyncio.run(main())
    assert notifications(root) == []


def test_failures_context_and_status_messages_reach_model_and_user(
        make_project: MakeProject) -> None:
    pre_context = ("echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", "
                   "\"additionalContext\": \"Remember the style guide.\"}}'")
    root = make_project({"hooks": {
        "PreToolUse": [{"matcher": "Read", "hooks": [
            {"type": "command", "command": pre_context, "statusMessage": "Looking around"}]}],
        "PostToolUseFailure": [{"hooks": [hook("failure_note.sh")]}],
    }})
    (root / "a.txt").write_text("alpha\n")
    client = script(reply("", ("Read", {"file_path": str(root / "a.txt")}),
                          ("Read", {"file_path": str(root / "missing.txt")})), reply("ok"))
    seen: list[LiveSessionEvent] = []

    async def main() -> None:
        live = await assemble(root, client).open_session(memory_store())
        live.subscribe(seen.append)
        await live.submit("read both")
        await live.close()

    asyncio.run(main())
    found, missing = results(client)
    assert "alpha" in found and "Remember the style guide." in found
    assert "does not exist" in missing
    assert "The Read call failed; read the error before retrying." in missing
    assert "Remember the style guide." in missing  # PreToolUse context joins failures too
    assert [e.text for e in seen if isinstance(e, Notice)].count("Looking around") == 2


def test_a_failing_session_start_hook_is_named_with_its_exit_code_and_stderr(
        make_project: MakeProject) -> None:
    failing = "echo 'line one' >&2; echo 'export: not a valid identifier' >&2; exit 1"
    root = make_project({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": failing}]}]}})
    seen: list[LiveSessionEvent] = []

    async def main() -> None:
        live = await assemble(root, script()).open_session(memory_store())
        live.subscribe(seen.append)  # subscribed after the hook ran: the warning waited
        await live.close()

    asyncio.run(main())
    [warning] = [e.text for e in seen if isinstance(e, Notice) and e.level == "warning"]
    assert "failed with exit code 1" in warning
    assert warning.endswith("line one\nexport: not a valid identifier")


def test_claude_code_commands_expand_arguments_files_and_allowed_commands(
        make_project: MakeProject) -> None:
    root = make_project({})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    commands = root / ".claude" / "commands" / "frontend"
    commands.mkdir(parents=True)
    (root / "style.md").write_text("Use tabs.\n")
    (commands / "component.md").write_text(
        "---\ndescription: Make a component\nargument-hint: <name> [kind]\n"
        "allowed-tools: Bash(git status:*), Read\nmodel: claude-haiku-4-5\n---\n"
        "Create the $1 component ($2) following @style.md.\n"
        "Branch state: !`git status --short`\nNot run: !`rm -rf build`\n")
    client = script(reply("made"))

    async def main() -> LiveSession:
        live = await assemble(root, client).open_session(memory_store())
        command = live.commands.get("frontend:component") if live.commands else None
        assert command is not None
        assert (command.description, command.usage) == (
            "Make a component", "/frontend:component <name> [kind]")
        await live.submit("/frontend:component Button primary")
        await live.close()
        return live

    asyncio.run(main())
    prompt = prompt_of(client)
    assert "Create the Button component (primary) following @style.md." in prompt
    assert "Contents of style.md:\n```\nUse tabs.\n" in prompt
    assert "Branch state: ?? .claude/" in prompt
    assert "(the command `rm -rf build` was not run:" in prompt


def test_permission_request_and_session_start_hooks_get_their_documented_fields(
        make_project: MakeProject, tmp_path: Path) -> None:
    from aimon_core.session import FileSessionLeaseStore, FileSessionRecordStore

    root = make_project({"hooks": {
        "PermissionRequest": [{"hooks": [
            {"type": "command", "command": 'cat > "$CLAUDE_PROJECT_DIR/permission.json"'}]}],
        "SessionStart": [{"hooks": [
            {"type": "command", "command": 'cat > "$CLAUDE_PROJECT_DIR/start.json"'}]}],
    }})
    base = tmp_path / "sessions"
    store = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
    client = script(reply("", ("Bash", {"command": "touch x"})), reply("done"))

    async def main() -> None:
        live = await assemble(root, client).open_session(store)

        def answer(event: LiveSessionEvent) -> None:
            if isinstance(event, ApprovalRequested):
                live.answer(event.request.id, ApprovalAnswer(allowed=False))

        live.subscribe(answer, answers=True)
        await live.submit("go")
        await live.close()

    asyncio.run(main())
    asked = json.loads((root / "permission.json").read_text())
    assert asked["hook_event_name"] == "PermissionRequest"
    assert asked["tool_use_id"].startswith("toolu_")
    assert asked["transcript_path"].endswith(".claude.jsonl")
    assert asked["permission_mode"] == "default"
    started = json.loads((root / "start.json").read_text())
    assert (started["source"], started["model"]) == ("startup", "scripted")
    assert started["transcript_path"] == asked["transcript_path"]


def test_a_resumed_session_continues_its_claude_code_transcript(
        make_project: MakeProject, tmp_path: Path) -> None:
    from aimon_core.session import FileSessionLeaseStore, FileSessionRecordStore

    root = make_project({})
    base = tmp_path / "sessions"
    store = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
    client = script(reply("first"), reply("second"))

    async def main() -> Path:
        live = await assemble(root, client).open_session(store)
        await live.submit("one")
        await live.close()
        again = await assemble(root, client).open_session(store, session_id=str(live.id))
        await again.submit("two")
        await again.close()
        path = again.hooks.transcript_path
        assert path is not None
        return Path(path)

    lines = [json.loads(line) for line in asyncio.run(main()).read_text().splitlines()]
    assert [line["type"] for line in lines] == ["user", "assistant", "user", "assistant"]
    assert [line["parentUuid"] for line in lines] == [None, *(line["uuid"] for line in lines[:3])]
