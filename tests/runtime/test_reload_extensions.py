"""Skills, subagents and Markdown commands added or edited while a runtime runs are used at
once: by the next command typed and the next model call (the Skill and Task tools list
them), as settings are reloaded."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.agent import parse_agent
from aimon_core.llm import ScriptedLLMClient
from aimon_core.runtime import AgentRuntimeRegistry, RuntimeParts

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")


def test_a_skill_an_agent_and_a_command_added_while_running_are_offered_at_once(
        tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    said: list[str] = []

    async def main() -> None:
        registry = AgentRuntimeRegistry(root, parts=RuntimeParts(
            client=ScriptedLLMClient(steps=[]), agent_definition=AGENT))
        async with registry:
            assembly = await registry.get()
            assert assembly.commands is not None and assembly.commands.get("changelog") is None
            told = asyncio.Event()

            def say(text: str, style: str) -> None:
                said.append(text)
                told.set()

            ready = asyncio.Event()
            watching = asyncio.ensure_future(registry.watch_extensions(say, poll=0.05,
                                                                       ready=ready))
            await ready.wait()
            skill = root / ".aimon" / "skills" / "changelog"
            skill.mkdir(parents=True)
            (skill / "SKILL.md").write_text(
                "---\nname: changelog\ndescription: Write a changelog entry.\n---\nWrite it.\n")
            (root / ".aimon" / "agents").mkdir()
            (root / ".aimon" / "agents" / "scribe.md").write_text(
                "---\nname: scribe\ndescription: Writes notes.\n---\nYou write notes.\n")
            (root / ".aimon" / "commands").mkdir()
            (root / ".aimon" / "commands" / "notes.md").write_text("Take notes on $ARGUMENTS\n")
            await asyncio.wait_for(told.wait(), 10)
            while not all(assembly.commands.get(n) for n in ("changelog", "notes")):
                told.clear()
                await asyncio.wait_for(told.wait(), 10)
            skill_tool = assembly.runtime.tools.get("Skill")
            task_tool = assembly.runtime.tools.get("Task")
            assert skill_tool is not None and "- changelog: Write a changelog entry." in \
                skill_tool.description
            assert task_tool is not None and "- scribe: Writes notes." in task_tool.description
            told.clear()
            (skill / "SKILL.md").unlink()
            skill.rmdir()
            await asyncio.wait_for(told.wait(), 10)
            assert assembly.commands.get("changelog") is None
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)

    asyncio.run(main())
    assert any("+/changelog" in text and "+/notes" in text for text in said), said
    assert any("-/changelog" in text for text in said), said
