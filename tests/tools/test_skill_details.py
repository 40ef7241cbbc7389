"""Skill details from the guide: the AIMON_* variables of skill hooks (AIMON_SUCCESS), the
render step's extra variables and empty-variable warnings, and the schema gate's WARN mode."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import ExecutionRequest, OrcaExecutor, Turn, allow_all
from aimon_core.hook import (
    HookEvent,
    HookInput,
    HookRegistry,
    PostToolUseFailureInput,
    PostToolUseInput,
    PreToolUseInput,
)
from aimon_core.llm import Message, ToolResultBlock, reply, script
from aimon_core.runtime._skill_hooks import register_skill_hooks
from aimon_core.skill import RenderContext, ShellAction, Skill, SkillHooks, render_skill
from aimon_core.tools import SchemaGate, ToolContext, ToolRegistry
from tests.agent.test_executor import ENV, echo, make_runtime, make_tool

CTX = RenderContext(agent_runtime_id="rt-1", user="ada", execution_id="e-1")


def _skill(tmp_path: Path, body: str = "Body", hooks: SkillHooks | None = None) -> Skill:
    folder = tmp_path / "my-skill"
    folder.mkdir(exist_ok=True)
    return Skill(name="my-skill", description="d", body=body, path=folder / "SKILL.md",
                 directory=folder, hooks=hooks or SkillHooks())


@pytest.mark.parametrize(("data", "expected"), [
    (PreToolUseInput(tool_name="Bash", tool_input={"command": "ls"}),
     {"AIMON_HOOK_EVENT": "PreToolUse", "AIMON_TOOL_NAME": "Bash"}),
    (PostToolUseInput(tool_name="Bash", tool_input={}, tool_response="ok"),
     {"AIMON_HOOK_EVENT": "PostToolUse", "AIMON_TOOL_NAME": "Bash", "AIMON_SUCCESS": "true"}),
    (PostToolUseFailureInput(tool_name="Bash", tool_input={}, error="exit 1"),
     {"AIMON_HOOK_EVENT": "PostToolUseFailure", "AIMON_TOOL_NAME": "Bash",
      "AIMON_SUCCESS": "false"}),
])
def test_a_skill_hook_gets_the_aimon_variables(tmp_path: Path, data: Any,
                                               expected: dict[str, str]) -> None:
    out = tmp_path / "env.json"
    command = (f"{sys.executable} -c \"import json, os; json.dump({{k: v for k, v in "
               f"os.environ.items() if k.startswith('AIMON_')}}, open({str(out)!r}, 'w'))\"")
    action = ShellAction(matcher=None, command=command, timeout_seconds=30.0)
    hooks = SkillHooks(pre_tool=(action,), post_tool=(action,))
    skill = _skill(tmp_path, hooks=hooks)
    registry = HookRegistry()
    register_skill_hooks(registry, skill, ToolRegistry(), tmp_path)
    hook_input = HookInput(session_id="s-1", cwd=tmp_path, data=data)
    asyncio.run(registry.dispatch(hook_input.event, hook_input))
    # What the hook inherits unchanged (AIMON_HOME, CI's own AIMON_* settings) is not its own.
    seen = {k: v for k, v in json.loads(out.read_text()).items() if os.environ.get(k) != v}
    assert seen == {"AIMON_SKILL_DIR": str(skill.directory), "AIMON_SKILL_NAME": "my-skill",
                    "AIMON_SESSION_ID": "s-1", "AIMON_PROJECT_DIR": str(tmp_path), **expected}


def test_render_takes_extra_variables_and_warns_on_an_empty_one(tmp_path: Path) -> None:
    skill = _skill(tmp_path, "In ${TICKET} for ${AIMON_USER}, session [${AIMON_SESSION_ID}], "
                             "${REVIEWER}, ${UNKNOWN}.")
    warnings: list[str] = []
    text = render_skill(skill, "", CTX, extra={"TICKET": "AIM-34", "REVIEWER": "",
                                               "AIMON_USER": "mallory"}, warn=warnings.append)
    assert text == "In AIM-34 for ada, session [], , ${UNKNOWN}.\n"
    assert warnings == [f"{skill.path}: ${{AIMON_SESSION_ID}} is empty here",
                        f"{skill.path}: ${{REVIEWER}} is empty here"]


@pytest.mark.parametrize(("gate", "answer"), [
    (SchemaGate.STRICT, "Invalid input for Echo: Additional properties are not allowed"),
    (SchemaGate.WARN, "echo: x"),
])
def test_the_schema_gate_refuses_or_warns(ctx: ToolContext, gate: SchemaGate, answer: str,
                                          caplog: pytest.LogCaptureFixture) -> None:
    client = script(reply("", ("Echo", {"text": "x", "loud": True})), reply("done"))
    runtime = make_runtime(client, make_tool("Echo", echo), gate=allow_all, schema_gate=gate)

    async def main() -> Any:
        return await OrcaExecutor().execute(runtime, ExecutionRequest(
            prompt=Message.user("go"), tool_context=ctx, environment=ENV, turn=Turn()))

    result = asyncio.run(main())
    [block] = [b for m in result.new_messages for b in m.content
               if isinstance(b, ToolResultBlock)]
    assert block.text.startswith(answer)
    warned = [r for r in caplog.records if "schemaGate warn" in r.getMessage()]
    assert bool(warned) is (gate is SchemaGate.WARN)


def test_post_tool_actions_run_for_failed_calls_too() -> None:
    from aimon_core.runtime import _skill_hooks

    events = [event for field, event in _skill_hooks._EVENTS if field == "post_tool"]
    assert events == [HookEvent.POST_TOOL, HookEvent.POST_TOOL_FAILURE]
