"""Claude Code's hook-entry fields (`async`, `statusMessage`, `if`), new events, payload shapes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from aimon_core.hook import (
    CommandHookSpec,
    HookEvent,
    HookInput,
    HookRegistry,
    NotificationInput,
    PostToolUseFailureInput,
    claude_tool_response,
    condition_accepts,
    structured_patch,
)
from tests.hook.conftest import hook_input


def spec(command: str, event: HookEvent = HookEvent.PRE_TOOL, **fields: object
         ) -> CommandHookSpec:
    return CommandHookSpec(event=event, matcher=None, command=command, **fields)  # type: ignore[arg-type]


def bash_input(command: str, event: HookEvent = HookEvent.PRE_TOOL) -> HookInput:
    return hook_input(event, cwd=Path.cwd(), tool_name="Bash", tool_input={"command": command})


@pytest.mark.parametrize(("condition", "tool", "tool_input", "accepted"), [
    (None, "Bash", {"command": "rm x"}, True),
    ("Bash(git *)", "Bash", {"command": "git push"}, True),
    ("Bash(git *)", "Bash", {"command": "git"}, True),
    ("Bash(git *)", "Bash", {"command": "gitk"}, False),
    ("Bash(git:*)", "Bash", {"command": "git status"}, True),
    ("Bash(git *)", "Edit", {"file_path": "git x"}, False),
    ("Edit(*.ts)", "Edit", {"file_path": "/src/a.ts"}, True),
    ("Edit(*.ts)", "Edit", {"file_path": "/src/a.py"}, False),
    ("Edit|Write", "Write", {"file_path": "x"}, True),
    ("Bash(git *)", None, None, True),  # no tool: conditions do not apply
])
def test_if_conditions_narrow_tool_hooks(condition: str | None, tool: str | None,
                                         tool_input: dict[str, str] | None,
                                         accepted: bool) -> None:
    assert condition_accepts(condition, tool, tool_input) is accepted


def test_a_hook_whose_condition_fails_does_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    registry = HookRegistry([spec(f"touch {marker}", condition="Bash(git *)")])
    asyncio.run(registry.dispatch(HookEvent.PRE_TOOL, bash_input("ls")))
    assert not marker.exists()
    asyncio.run(registry.dispatch(HookEvent.PRE_TOOL, bash_input("git status")))
    assert marker.exists()


def test_async_hooks_do_not_block_and_are_drained(tmp_path: Path) -> None:
    gate, out = tmp_path / "gate", tmp_path / "out"
    # The hook waits for a file the test writes after dispatch returned: only an async hook
    # lets dispatch return first.
    command = f"while [ ! -e {gate} ]; do sleep 0.01; done; cat > {out}"
    registry = HookRegistry([spec(command, HookEvent.POST_TOOL, run_async=True,
                                  status_message="Logging")])
    notices: list[tuple[str, str]] = []

    async def main() -> None:
        result = await registry.dispatch(HookEvent.POST_TOOL,
                                         bash_input("ls", HookEvent.POST_TOOL),
                                         notice=lambda *note: notices.append(note))
        assert result.errors == () and registry.running == 1
        gate.touch()
        await registry.drain(30)
        assert registry.running == 0

    asyncio.run(main())
    assert notices == [("Logging", "info")]
    assert json.loads(out.read_text())["tool_name"] == "Bash"


def test_a_failing_async_hook_is_reported_through_the_notice(tmp_path: Path) -> None:
    registry = HookRegistry([spec("echo broken >&2; exit 3", HookEvent.POST_TOOL,
                                  run_async=True)])
    notices: list[tuple[str, str]] = []

    async def main() -> None:
        await registry.dispatch(HookEvent.POST_TOOL, bash_input("ls", HookEvent.POST_TOOL),
                                notice=lambda *note: notices.append(note))
        await registry.drain(30)

    asyncio.run(main())
    [(notice, level)] = notices
    assert "failed with exit code 3: broken" in notice and level == "warning"


def test_a_hook_error_shows_the_tail_of_stderr() -> None:
    noisy = "python3 -c \"import sys; sys.stderr.write('x' * 5000 + 'THE END')\"; exit 1"
    registry = HookRegistry([spec(noisy)])
    result = asyncio.run(registry.dispatch(HookEvent.PRE_TOOL, bash_input("ls")))
    [error] = result.errors
    assert "failed with exit code 1: ... " in error and error.endswith("THE END")


def test_new_events_carry_claude_codes_fields() -> None:
    failure = HookInput(data=PostToolUseFailureInput(
        tool_name="Bash", tool_input={"command": "false"}, tool_use_id="t1",
        error="Exit code 1", is_interrupt=False), session_id="s", cwd=Path("/p"))
    assert failure.to_dict() == {
        "session_id": "s", "transcript_path": None, "cwd": "/p",
        "hook_event_name": "PostToolUseFailure", "tool_name": "Bash",
        "tool_input": {"command": "false"}, "tool_use_id": "t1", "error": "Exit code 1",
        "is_interrupt": False}
    assert failure.match_subject() == "Bash"
    notice = HookInput(data=NotificationInput(message="waiting", notification_type="idle_prompt"),
                       session_id="s", cwd=Path("/p"))
    assert notice.match_subject() == "idle_prompt"
    assert notice.to_dict()["notification_type"] == "idle_prompt"


DIFF = """--- a/x.py
+++ b/x.py
@@ -1,2 +1,2 @@
 keep
-old
+new
@@ -10 +10,2 @@
-a
+b
+c
"""


def test_structured_patch_follows_the_unified_diff() -> None:
    assert structured_patch(DIFF) == [
        {"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2,
         "lines": [" keep", "-old", "+new"]},
        {"oldStart": 10, "oldLines": 1, "newStart": 10, "newLines": 2,
         "lines": ["-a", "+b", "+c"]},
    ]


def test_tool_responses_have_claude_codes_shape() -> None:
    bash = claude_tool_response("Bash", {"command": "ls"}, "a\nerr", {
        "stdout": "a\n", "stderr": "err", "interrupted": False, "exit_code": 0})
    assert bash == {"stdout": "a\n", "stderr": "err", "interrupted": False, "isImage": False,
                    "exitCode": 0}
    edit = claude_tool_response("Edit", {"file_path": "x.py", "old_string": "old",
                                         "new_string": "new"},
                                "Edited", {"path": "/p/x.py", "diff": DIFF})
    assert edit["filePath"] == "/p/x.py" and edit["oldString"] == "old"
    assert edit["newString"] == "new" and len(edit["structuredPatch"]) == 2
    write = claude_tool_response("Write", {"file_path": "n.py", "content": "hi\n"}, "Created",
                                 {"path": "/p/n.py", "created": True, "diff": ""})
    assert write == {"type": "create", "filePath": "/p/n.py", "content": "hi\n",
                     "structuredPatch": [], "originalFile": None}
    read = claude_tool_response("Read", {"file_path": "n.py"}, "     1\thi", {
        "path": "/p/n.py", "first_line": 1, "last_line": 1, "total_lines": 1})
    assert read == {"type": "text", "file": {"filePath": "/p/n.py", "content": "     1\thi",
                                             "numLines": 1, "startLine": 1, "totalLines": 1}}
    other = claude_tool_response("TodoWrite", {}, "ok", {"todos": []})
    assert other == {"content": "ok", "todos": []}
