"""Skills and subagents in use: the Skill and Task tools, slash commands, forks, background tasks.

Runtimes come from `build_runtime`, as the command line builds them, with a scripted client.
The parent and its forks share the client; steps that must go to a fork are routed by the
system prompt of the request.
"""

from __future__ import annotations

import asyncio
import getpass
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from aimon_core.agent import (
    ApprovalAnswer,
    ApprovalRequested,
    ApprovalScope,
    Notice,
    StopCause,
    SubagentStep,
)
from aimon_core.hook import (
    HookEvent,
    HookInput,
    HookResult,
    SubagentStartInput,
    SubagentStopInput,
)
from aimon_core.live import CommandRan, LiveSession, LiveSessionEvent
from aimon_core.llm import (
    LLMRequest,
    LLMResponse,
    ScriptedLLMClient,
    ToolResultBlock,
    reply,
    script,
)
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore

VARS_SKILL = """\
---
name: vars
description: Show every render variable. Use when asked about variables.
argument-hint: "FIRST SECOND"
---
first=$1 second=$2 all=$ARGUMENTS
dir=${AIMON_SKILL_DIR}
runtime=${AIMON_AGENT_RUNTIME_ID}
session=[${AIMON_SESSION_ID}] execution=[${AIMON_EXECUTION_ID}]
user=${AIMON_USER} unknown=${NOT_A_VAR}
"""

HELPER_AGENT = """\
---
name: helper
description: Helps with small self-contained tasks. Use for lookups.
tools: Read, Write, Grep
max-iterations: 5
---
You are the helper subagent. Do the task and answer briefly.
"""


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    skill = root / ".aimon" / "skills" / "vars"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(VARS_SKILL)
    (skill / "scripts" / "run.sh").write_text("echo hi\n")
    (root / ".aimon" / "agents").mkdir(parents=True)
    (root / ".aimon" / "agents" / "helper.md").write_text(HELPER_AGENT)
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return root


def memory_store() -> SessionStore:
    return SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())


def assemble(root: Path, client: ScriptedLLMClient, *allowed: str) -> AgentAssembly:
    return build_runtime(root, flags=RuntimeFlags(allowed=allowed),
                         parts=RuntimeParts(client=client))


def routed(parent: list[LLMResponse], fork: list[LLMResponse], marker: str
           ) -> ScriptedLLMClient:
    """A client whose requests go to `fork` when the system prompt holds `marker`."""

    def step(request: LLMRequest) -> LLMResponse:
        return (fork if marker in request.system else parent).pop(0)

    steps: list[Callable[[LLMRequest], LLMResponse]] = [step] * (len(parent) + len(fork))
    return ScriptedLLMClient(steps=list(steps))


def tool_results(request: LLMRequest) -> list[str]:
    return [block.text for message in request.messages for block in message.content
            if isinstance(block, ToolResultBlock)]


async def open_live(assembly: AgentAssembly, seen: list[LiveSessionEvent],
                    answer: ApprovalAnswer | None = None) -> LiveSession:
    live = await assembly.open_session(memory_store())

    def subscriber(event: LiveSessionEvent) -> None:
        seen.append(event)
        if isinstance(event, ApprovalRequested) and answer is not None:
            live.answer(event.request.id, answer)

    live.subscribe(subscriber, answers=answer is not None)
    return live


def test_the_skill_and_task_tools_list_skills_and_subagents_by_name(tmp_path: Path) -> None:
    root = project(tmp_path)
    user_only = root / ".aimon" / "skills" / "secret"
    user_only.mkdir()
    (user_only / "SKILL.md").write_text(
        "---\nname: secret\ndescription: Only for people.\ninvoke:\n  model: false\n---\nx\n")
    client = script(reply("hi"))

    async def main() -> None:
        live = await assemble(root, client).open_session(memory_store())
        await live.submit("hello")
        await live.close()

    asyncio.run(main())
    request = client.requests[0]
    described = {tool.name: tool.description for tool in request.tools}
    skills, agents = described["Skill"], described["Task"]
    assert "- vars: Show every render variable." in skills
    assert "- review: Review code changes" in skills
    assert "- secret:" not in skills
    assert "first=$1" not in skills  # bodies stay out: progressive disclosure
    assert "- helper: Helps with small self-contained tasks." in agents
    names = [tool.name for tool in request.tools]
    assert {"Skill", "Task", "TaskList", "TaskStop", "AgentOutput"} <= set(names)


def check_rendered(text: str, root: Path, *, session: str, execution: str) -> None:
    skill_dir = root / ".aimon" / "skills" / "vars"
    assert "first=a second=b c all=a 'b c'" in text
    assert f"dir={skill_dir}" in text
    assert "runtime=agent:default:" in text
    assert f"session=[{session}] execution=[{execution}]" in text
    assert f"user={getpass.getuser()} unknown=${{NOT_A_VAR}}" in text
    assert f"base directory {skill_dir} " in text and "Available Files:\n- scripts/run.sh\n" in text


def test_the_skill_tool_renders_every_variable(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = script(reply("", ("Skill", {"skill": "vars", "args": "a 'b c'"})), reply("done"))

    async def main() -> str:
        live = await assemble(root, client, "Skill(vars)").open_session(memory_store())
        await live.submit("show the variables")
        await live.close()
        return str(live.id)

    session = asyncio.run(main())
    [result] = tool_results(client.requests[1])
    assert result.startswith('Skill "vars" is active')
    check_rendered(result, root, session=session, execution="")


def test_the_slash_command_renders_every_variable_and_runs_the_turn(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = script(reply("ok"))

    async def main() -> tuple[str, StopCause]:
        live = await assemble(root, client).open_session(memory_store())
        result = await live.submit("/vars a 'b c'")
        await live.close()
        return str(live.id), result.stop

    session, stop = asyncio.run(main())
    assert stop is StopCause.ANSWERED
    check_rendered(client.requests[0].messages[0].text, root, session=session, execution="")


def test_skill_name_also_runs_by_skill_command(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = script(reply("ok"))

    async def main() -> None:
        live = await assemble(root, client).open_session(memory_store())
        await live.submit("/skill vars x y")
        await live.close()

    asyncio.run(main())
    assert "first=x second=y" in client.requests[0].messages[0].text


def test_a_forked_skill_renders_with_an_execution_id_and_no_session_id(tmp_path: Path) -> None:
    root = project(tmp_path)
    text = (root / ".aimon" / "skills" / "vars" / "SKILL.md").read_text()
    (root / ".aimon" / "skills" / "vars" / "SKILL.md").write_text(text.replace(
        "argument-hint", "execution:\n  mode: fork\n  agent: helper\nargument-hint"))
    client = script(reply("forked answer"))

    async def main() -> str:
        live = await assemble(root, client).open_session(memory_store())
        result = await live.submit("/vars a 'b c'")
        await live.close()
        assert result.stop is StopCause.COMMAND and result.text == "forked answer"
        assert live.record.transcript.messages == ()  # the fork writes nothing to the session
        return str(live.id)

    session = asyncio.run(main())
    goal = client.requests[0].messages[0].text
    assert "You are the helper subagent" in client.requests[0].system
    assert "session=[] execution=[exec-" in goal and session not in goal


def test_slash_review_forks_the_code_reviewer_and_prints_its_answer(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = script(reply("", ("Read", {"file_path": str(root / "calc.py")})),
                    reply("1 bug: calc.py:2 subtracts"))
    seen: list[LiveSessionEvent] = []

    async def main() -> None:
        live = await open_live(assemble(root, client), seen)
        result = await live.submit("/review calc.py")
        await live.close()
        assert result.stop is StopCause.COMMAND
        assert result.text == "1 bug: calc.py:2 subtracts"

    asyncio.run(main())
    fork = client.requests[0]
    assert "You are a senior engineer reviewing a change" in fork.system
    assert "Review this change: calc.py" in fork.messages[0].text
    assert sorted(t.name for t in fork.tools) == ["Bash", "Glob", "Grep", "Read"]
    steps = [(e.agent, e.label) for e in seen if isinstance(e, SubagentStep)]
    assert steps == [("code-reviewer", "Read(calc.py)")], steps
    [ran] = [e for e in seen if isinstance(e, CommandRan)]
    assert ran.outcome.text == "1 bug: calc.py:2 subtracts"


def test_the_skill_tool_wraps_a_forked_answer_for_the_parent(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = routed([reply("", ("Skill", {"skill": "review", "args": "calc.py"})),
                     reply("the reviewer found a bug")],
                    [reply("calc.py:2 subtracts instead of adding")], "reviewing a change")

    async def main() -> None:
        live = await assemble(root, client, "Skill(review)").open_session(memory_store())
        result = await live.submit("review my change")
        await live.close()
        assert result.text == "the reviewer found a bug"

    asyncio.run(main())
    [result] = tool_results(client.requests[-1])
    assert result.startswith("=== Skill Forked ===\nskill: review\nagent: code-reviewer")
    assert "calc.py:2 subtracts instead of adding" in result
    assert result.rstrip().endswith("=== End Skill Forked ===")


def test_the_task_tool_runs_a_subagent_and_fires_its_hooks(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = routed([reply("", ("Task", {"description": "find add", "prompt": "Where is add?",
                                          "subagent_type": "helper"})),
                     reply("it is in calc.py")],
                    [reply("calc.py line 1")], "You are the helper subagent")
    fired: list[HookInput] = []

    async def hook(hook_input: HookInput) -> HookResult | None:
        fired.append(hook_input)
        return None

    async def main() -> str:
        assembly = assemble(root, client)
        assembly.hooks.register(HookEvent.SUBAGENT_START, hook)
        assembly.hooks.register(HookEvent.SUBAGENT_STOP, hook)
        live = await assembly.open_session(memory_store())
        await live.submit("where is add?")
        await live.close()
        return str(live.id)

    session = asyncio.run(main())
    assert tool_results(client.requests[-1]) == ["calc.py line 1"]
    fork = next(r for r in client.requests if "helper subagent" in r.system)
    assert sorted(t.name for t in fork.tools) == ["Grep", "Read", "Write"]
    assert [(h.event, h.match_subject(), h.session_id) for h in fired] == [
        (HookEvent.SUBAGENT_START, "helper", session), (HookEvent.SUBAGENT_STOP, "helper", session)]
    start, stop = (h.data for h in fired)
    assert isinstance(start, SubagentStartInput) and isinstance(stop, SubagentStopInput)
    assert stop.last_assistant_message == "calc.py line 1"
    assert start.agent_id.startswith("exec-") and stop.agent_id == start.agent_id


def test_unknown_subagent_and_broken_forks_are_errors_the_model_reads(tmp_path: Path) -> None:
    root = project(tmp_path)
    skills = root / ".aimon" / "skills"
    for name, execution in (("ghost", "mode: fork\n  agent: nobody"), ("bare", "mode: fork"),
                            ("disjoint", "mode: fork\n  agent: helper")):
        (skills / name).mkdir()
        tools = "allowed-tools: Bash\n" if name == "disjoint" else ""
        (skills / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: d.\n{tools}execution:\n  {execution}\n---\nbody\n")
    client = script(reply("", ("Task", {"description": "d", "prompt": "p",
                                         "subagent_type": "nobody"}),
                           ("Skill", {"skill": "ghost"}), ("Skill", {"skill": "bare"}),
                           ("Skill", {"skill": "disjoint"})), reply("ok"))

    async def main() -> None:
        live = await assemble(root, client, "Skill").open_session(memory_store())
        await live.submit("go")
        await live.close()

    asyncio.run(main())
    task, ghost, bare, disjoint = tool_results(client.requests[1])
    assert task.startswith("Unknown subagent 'nobody'. Available subagents: ")
    assert "forks into an unknown subagent 'nobody'" in ghost
    assert "execution.mode fork without execution.agent" in bare
    assert "cannot fork into 'helper'" in disjoint and "['Bash']" in disjoint
    assert "['Read', 'Write', 'Grep']" in disjoint


def test_background_tasks_list_wait_and_stop(tmp_path: Path) -> None:
    root = project(tmp_path)

    async def main() -> list[str]:
        started = asyncio.Event()

        def slow_fork(request: LLMRequest) -> LLMResponse:
            started.set()
            return reply("background answer")

        fork_steps: list[LLMResponse] = []
        parent = [reply("", ("Task", {"description": "bg", "prompt": "p",
                                      "subagent_type": "helper", "run_in_background": True})),
                  reply("", ("AgentOutput", {"task_id": "task-1"})),
                  reply("", ("TaskList", {})),
                  reply("", ("TaskStop", {"task_id": "task-1"}),
                        ("AgentOutput", {"task_id": "task-9"})),
                  reply("done")]

        def step(request: LLMRequest) -> LLMResponse:
            if "helper subagent" in request.system:
                return fork_steps.pop(0) if fork_steps else slow_fork(request)
            return parent.pop(0)

        client = ScriptedLLMClient(steps=[step] * 6)
        live = await assemble(root, client).open_session(memory_store())
        await live.submit("start it")
        await live.close()
        assert started.is_set()
        return [text for request in client.requests[-1:] for text in tool_results(request)]

    results = asyncio.run(main())
    assert results[0].startswith("Started task-1 (subagent helper) in the background")
    assert results[1] == "background answer"
    assert results[2].startswith("task-1  completed  helper  bg")
    assert results[3] == "task-1 had already ended (completed)."
    assert results[4] == "No task 'task-9'; see TaskList."


def test_a_fork_inherits_the_sessions_approvals_and_asks_through_it(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = routed(
        [reply("", ("Task", {"description": "write", "prompt": "write two files",
                             "subagent_type": "helper"})), reply("done")],
        [reply("", ("Write", {"file_path": "approved.txt", "content": "yes\n"}),
               ("Write", {"file_path": "other.txt", "content": "no\n"})),
         reply("wrote one")], "You are the helper subagent")
    seen: list[LiveSessionEvent] = []

    async def main() -> None:
        assembly = assemble(root, client)
        live = await open_live(assembly, seen, ApprovalAnswer(allowed=False, reason="no"))
        live.session_approvals.add("Write(approved.txt)")
        await live.submit("write files")
        await live.close()

    asyncio.run(main())
    assert (root / "approved.txt").read_text() == "yes\n"
    assert not (root / "other.txt").exists()
    asked = [e.request for e in seen if isinstance(e, ApprovalRequested)]
    assert [r.tool_name for r in asked] == ["Write"]
    assert asked[0].subject_text == "other.txt"
    fork = [r for r in client.requests if "helper subagent" in r.system]
    assert "The user denied this tool call." in tool_results(fork[-1])[1]


def test_model_invocation_asks_like_a_tool_and_remembers_the_session_answer(
        tmp_path: Path) -> None:
    root = project(tmp_path)
    call: tuple[str, dict[str, object]] = ("Skill", {"skill": "vars", "args": "1 2"})
    client = script(reply("", call), reply("one"), reply("", call), reply("two"))
    seen: list[LiveSessionEvent] = []

    async def main() -> None:
        assembly = assemble(root, client)
        live = await open_live(assembly, seen,
                               ApprovalAnswer(allowed=True, scope=ApprovalScope.SESSION))
        await live.submit("first")
        await live.submit("second")
        assert live.record.approvals == ("Skill(vars)",)
        await live.close()

    asyncio.run(main())
    asked = [e.request for e in seen if isinstance(e, ApprovalRequested)]
    assert len(asked) == 1 and asked[0].suggested_rule == "Skill(vars)"
    assert "first=1 second=2" in tool_results(client.requests[3])[-1]


def test_deny_rules_name_skills(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / ".aimon" / "skills" / "hello").mkdir()
    (root / ".aimon" / "skills" / "hello" / "SKILL.md").write_text(
        "---\nname: hello\ndescription: Say hello.\n---\nSay hello.\n")
    client = script(reply("", ("Skill", {"skill": "vars"}), ("Skill", {"skill": "hello"}),
                           ("Skill", {"skill": "commit"})), reply("ok"))
    flags = RuntimeFlags(allowed=("Skill",), disallowed=("Skill(vars)",))

    async def main() -> None:
        assembly = build_runtime(root, flags=flags, parts=RuntimeParts(client=client))
        live = await assembly.open_session(memory_store())
        await live.submit("go")
        await live.close()

    asyncio.run(main())
    denied, allowed, user_only = tool_results(client.requests[1])
    assert denied.startswith("Permission denied: denied by rule Skill(vars)")
    assert allowed.startswith('Skill "hello" is active')
    assert user_only == ("Skill 'commit' can only be started by the user (/commit); do the "
                         "work without it.")


def test_skills_agents_and_task_commands(tmp_path: Path) -> None:
    root = project(tmp_path)
    commit = root / ".aimon" / "skills" / "commit"
    commit.mkdir()
    (commit / "SKILL.md").write_text("")  # an empty body switches the built-in off
    client = script(reply("the helper's answer"))

    async def main() -> list[str]:
        live = await assemble(root, client).open_session(memory_store())
        texts = [(await live.submit(text)).text
                 for text in ("/skills", "/agents", "/task helper find add", "/commit")]
        await live.close()
        return texts

    skills, agents, task, commit_out = asyncio.run(main())
    assert "vars" in skills and "project" in skills and str(root / ".aimon") in skills
    assert "review" in skills and "commit" in skills and "(disabled)" in skills
    assert "helper" in agents and "code-reviewer" in agents and "builtin" in agents
    assert task == "the helper's answer"
    assert commit_out.startswith("Unknown command /commit")


SNAPSHOT = Path(__file__).with_name("extension_tool_schemas.snapshot.json")


def test_extension_tool_schemas_snapshot(tmp_path: Path) -> None:
    """Compare the Skill and subagent tools with the stored snapshot (see tests/tools).

    Run with AIMON_UPDATE_SNAPSHOTS=1 to rewrite the snapshot after a deliberate change.
    """
    tools = assemble(project(tmp_path), script()).runtime.tools
    current = [{"name": t.name, "read_only": t.read_only, "description": t.description,
                "input_schema": t.input_schema}
               for t in tools if t.name in ("Skill", "Task", "TaskList", "TaskStop",
                                            "AgentOutput")]
    assert [c["name"] for c in current] == ["Skill", "Task", "TaskList", "TaskStop",
                                            "AgentOutput"]
    for entry in current:
        assert len(str(entry["description"])) > 100, entry["name"]
    text = json.dumps(current, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("AIMON_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == text, (
        "tool schemas changed; review and run with AIMON_UPDATE_SNAPSHOTS=1 to accept")


def test_closing_the_runtime_stops_its_background_tasks(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / ".aimon" / "agents" / "sleeper.md").write_text(
        "---\nname: sleeper\ndescription: Waits.\ntools: Bash\n---\nYou are the sleeper.\n")
    marker = f"sleep 30.{os.getpid()}"  # a command line no other test runs
    client = routed(
        [reply("", ("Task", {"description": "slow", "prompt": "wait a long time",
                             "subagent_type": "sleeper", "run_in_background": True})),
         reply("started it")],
        [reply("", ("Bash", {"command": marker})), reply("never")],
        "You are the sleeper")

    def running() -> bool:
        found = subprocess.run(["pgrep", "-f", marker], capture_output=True, check=False)
        return found.returncode == 0

    async def main() -> None:
        assembly = assemble(root, client, "Bash")
        live = await assembly.open_session(memory_store())
        await live.submit("start it")
        for _ in range(500):  # the fork's command starts in the background
            if running():
                break
            await asyncio.sleep(0.02)
        assert running(), "the background subagent never ran its command"
        await asyncio.wait_for(assembly.aclose(), 10)
        assert not running(), "closing the runtime left the background command running"
        await live.close()

    asyncio.run(main())


GUARDED_SKILL = """---
name: guarded
description: A fork whose own hooks guard it.
execution:
  mode: fork
  agent: pusher
hooks:
  preTool:
    - matcher: Bash(git push:*)
      deny: pushing is not part of this skill
  onStart:
    - shell: touch started-by-skill
---
Push the branch.
"""


@pytest.mark.parametrize("trusted", [True, False])
def test_a_forked_skills_own_hooks_run_in_a_trusted_folder_only(tmp_path: Path,
                                                                 trusted: bool) -> None:
    from aimon_core.config import TrustStore, load_settings

    root = project(tmp_path)
    (root / ".aimon" / "skills" / "guarded").mkdir(parents=True)
    (root / ".aimon" / "skills" / "guarded" / "SKILL.md").write_text(GUARDED_SKILL)
    (root / ".aimon" / "agents" / "pusher.md").write_text(
        "---\nname: pusher\ndescription: Pushes.\ntools: Bash\n---\nYou are the pusher.\n")
    if trusted:  # as the user does at the trust question, which names the skill's hooks
        request = load_settings(root, trust_store=TrustStore()).pending_trust
        assert request is not None and any("guarded" in line for line in request.what)
        TrustStore().trust(root, request.items)
    client = routed([], [reply("", ("Bash", {"command": "git push origin main"})),
                         reply("pushed?")], "You are the pusher")
    notices: list[str] = []

    async def main() -> None:
        live = await assemble(root, client, "Bash").open_session(memory_store())
        live.subscribe(lambda e: notices.append(e.text) if isinstance(e, Notice) else None)
        await live.submit("/guarded")
        await live.close()

    asyncio.run(main())
    pushed = tool_results(client.requests[-1])[0]
    assert ("pushing is not part of this skill" in pushed) is trusted
    assert (root / "started-by-skill").exists() is trusted
    assert any("hooks were not run" in n for n in notices) is not trusted


# A subagent's own hooks, as Claude Code's agent files write them (team/builder.md).
BUILDER_AGENT = """---
name: builder
description: Builds one task at a time.
tools: Write, Bash
hooks:
  PostToolUse:
    - matcher: "Write|Edit"
      hooks:
        - type: command
          command: echo "$CLAUDE_PROJECT_DIR" > checked-by-builder
  Stop:
    - hooks:
        - type: command
          command: touch stopped-builder
---
You are the builder.
"""


@pytest.mark.parametrize("trusted", [True, False])
def test_a_subagents_own_hooks_run_in_its_fork_once_trusted(tmp_path: Path,
                                                            trusted: bool) -> None:
    from aimon_core.config import TrustStore, load_settings

    root = project(tmp_path)
    (root / ".claude" / "agents" / "team").mkdir(parents=True)
    (root / ".claude" / "agents" / "team" / "builder.md").write_text(BUILDER_AGENT)
    if trusted:  # the trust question names the agent's hooks
        request = load_settings(root, trust_store=TrustStore()).pending_trust
        assert request is not None
        assert any("hooks of the subagent builder" in line for line in request.what)
        TrustStore().trust(root, request.items)
    client = routed([reply("", ("Task", {"description": "build", "prompt": "build it",
                                         "subagent_type": "builder"})), reply("done")],
                    [reply("", ("Write", {"file_path": str(root / "out.txt"),
                                          "content": "x"})), reply("built")],
                    "You are the builder")
    notices: list[str] = []

    async def main() -> None:
        live = await assemble(root, client, "Task", "Write").open_session(memory_store())
        live.subscribe(lambda e: notices.append(e.text) if isinstance(e, Notice) else None)
        await live.submit("build")
        await live.close()

    asyncio.run(main())
    assert (root / "out.txt").read_text() == "x"
    checked = root / "checked-by-builder"
    assert checked.exists() is trusted
    if trusted:
        assert checked.read_text().strip() == str(root)
    assert (root / "stopped-builder").exists() is trusted
    assert any("subagent builder: its hooks were not run" in n for n in notices) is not trusted
