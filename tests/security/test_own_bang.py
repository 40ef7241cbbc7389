"""Class: `` !`command` `` lines of custom commands, which aimon runs for the user.

A command file in a cloned repository chooses the command; typing `/name` is not approving it.
Each line passes the permission gate a Bash tool call passes (deny rules, the mode, ask rules,
asking whoever answers for the session; refused in print mode unless a rule allows it) and runs
as the Bash tool runs commands (no credentials in its environment or its output).

The table is every way the gate can answer, by whether someone can be asked and what they say.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import ApprovalAnswer, ApprovalRequested
from aimon_core.live import LiveSessionEvent
from aimon_core.llm import ScriptedLLMClient, reply, script
from aimon_core.runtime import RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import (
    MemorySessionLeaseStore,
    MemorySessionRecordStore,
    SessionStore,
    user_config_dir,
)

KEY = "sk-bang-provider-key-0123456789abcdef"


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """Settings, the mode, who answers, and whether `touch` may run."""

    id: str
    runs: bool
    permissions: dict[str, Any] = field(default_factory=dict)
    mode: str | None = None
    answer: bool | None = None
    """What the person says when asked; None: nobody can be asked (print mode)."""


CASES = (
    Case(id="deny_rule_person_says_yes", runs=False,
         permissions={"deny": ["Bash(touch:*)"]}, answer=True),
    Case(id="plan_mode_person_says_yes", runs=False, mode="plan", answer=True),
    Case(id="ask_rule_print_mode", runs=False, permissions={"ask": ["Bash(touch:*)"]}),
    Case(id="no_rule_print_mode", runs=False),
    Case(id="no_rule_person_says_no", runs=False, answer=False),
    Case(id="ctl_no_rule_person_says_yes", runs=True, answer=True),
    Case(id="ctl_allow_rule_print_mode", runs=True, permissions={"allow": ["Bash(touch:*)"]}),
)


def _expand(root: Path, case: Case, body: str) -> str:
    """Run `/x` (a command file holding `body`) in a session; return the prompt it made."""
    config = user_config_dir()
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"permissions": case.permissions}))
    (root / ".aimon" / "commands").mkdir(parents=True, exist_ok=True)
    (root / ".aimon" / "commands" / "x.md").write_text(body)
    client: ScriptedLLMClient = script(reply("ok"))

    async def main() -> None:
        assembly = build_runtime(root, flags=RuntimeFlags(permission_mode=case.mode),
                                 parts=RuntimeParts(client=client))
        live = await assembly.open_session(
            SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore()))

        def answer(event: LiveSessionEvent) -> None:
            if isinstance(event, ApprovalRequested) and case.answer is not None:
                live.answer(event.request.id, ApprovalAnswer(allowed=case.answer))

        if case.answer is not None:
            live.subscribe(answer, answers=True)
        await live.submit("/x")
        await live.close()

    asyncio.run(main())
    last = client.requests[0].messages[-1]
    return "\n".join(getattr(block, "text", "") for block in last.content)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_bang_lines_pass_the_bash_gate(case: Case, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    marker = tmp_path / "ran"
    prompt = _expand(root, case, f"Go: !`touch {marker}`\n")
    assert marker.exists() == case.runs, prompt
    if not case.runs:
        assert f"(the command `touch {marker}` was not run:" in prompt


def test_bang_lines_run_without_credentials(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DEPLOY_TOKEN", KEY[::-1])
    root = tmp_path / "proj"
    root.mkdir()
    case = Case(id="env", runs=True, answer=True)
    prompt = _expand(root, case, "Env: !`printenv; echo $OPENAI_API_KEY; echo done`\n")
    assert "done" in prompt
    assert KEY not in prompt and KEY[::-1] not in prompt
