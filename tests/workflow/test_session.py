"""Workflows in a session: the Workflow tool (asks first), /workflow, /goal, the live events."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.agent import (
    ApprovalAnswer,
    ApprovalRequested,
    StopCause,
    WorkflowRunChanged,
    WorkflowTaskChanged,
)
from aimon_core.live import LiveSessionEvent, SessionCommandHost
from aimon_core.llm import LLMRequest, LLMResponse, ScriptedLLMClient, reply
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore
from aimon_core.workflow import MemoryRunStore, RunState
from tests.workflow.conftest import (
    HeldClient,
    assemble,
    by_prompt,
    events_of,
    first_prompt,
    make_project,
)


def sessions() -> SessionStore:
    return SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())


def survey_routes(main: list[LLMResponse]) -> ScriptedLLMClient:
    """Tasks answer by prompt; the session's own turn (its first prompt) takes `main`."""
    return by_prompt({"List the functions": lambda r: reply("FUNCS"),
                      "List the tests": lambda r: reply("TESTS"),
                      "Summarise": lambda r: reply(f"REPORT {first_prompt(r)}"),
                      "please": main}, calls=3 + len(main))  # type: ignore[dict-item]


def test_the_workflow_tool_asks_first_then_runs_in_the_session(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    main = [reply("", ("Workflow", {"workflow": "survey"})), reply("The survey is done.")]
    client = survey_routes(main)
    seen: list[LiveSessionEvent] = []

    async def go() -> tuple[str, list[str]]:
        async with assemble(root, client) as assembly, \
                await assembly.open_session(sessions()) as live:
            def answer(event: LiveSessionEvent) -> None:
                seen.append(event)
                if isinstance(event, ApprovalRequested):
                    live.answer(event.request.id, ApprovalAnswer(allowed=True))

            live.subscribe(answer, answers=True)
            result = await live.submit("run the survey please")
            tools = [t.name for t in client.requests[0].tools]
            return result.text, tools

    text, tools = asyncio.run(go())
    assert text == "The survey is done."
    assert "Workflow" in tools
    asked = [e.request for e in seen if isinstance(e, ApprovalRequested)]
    assert [(r.tool_name, r.suggested_rule) for r in asked] == [("Workflow", "Workflow(survey)")]
    result = next(b for m in client.requests[-1].messages for b in m.content
                  if type(b).__name__ == "ToolResultBlock")
    assert "REPORT Summarise: FUNCS / TESTS" in result.text  # type: ignore[attr-defined]
    assert "Workflow survey run run-" in result.text  # type: ignore[attr-defined]
    changed = events_of(WorkflowTaskChanged, seen)  # type: ignore[arg-type]
    assert {e.label for e in changed} == {"explore/0", "explore/1", "report/0"}
    assert [e.state for e in events_of(WorkflowRunChanged, seen)][-1] is RunState.COMPLETED  # type: ignore[arg-type]


def test_without_anyone_to_ask_the_workflow_tool_is_refused(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    main = [reply("", ("Workflow", {"workflow": "survey"})), reply("Could not run it.")]
    client = survey_routes(main)

    async def go() -> str:
        async with assemble(root, client) as assembly, \
                await assembly.open_session(sessions()) as live:
            await live.submit("run the survey please")
            last = client.requests[-1].messages[-1]
            return last.content[0].text  # type: ignore[union-attr]

    assert "Workflow" in asyncio.run(go())
    assert len(client.requests) == 2  # no task ran


def test_no_workflow_files_no_workflow_tool(tmp_path: Path) -> None:
    root = tmp_path / "bare"
    root.mkdir()
    client = ScriptedLLMClient(steps=[reply("hi")])

    async def go() -> list[str]:
        async with assemble(root, client) as assembly, \
                await assembly.open_session(sessions()) as live:
            await live.submit("hello")
        return [t.name for t in client.requests[0].tools]

    assert "Workflow" not in asyncio.run(go())


def test_slash_workflow_lists_runs_shows_and_resumes(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    client = survey_routes([])
    store = MemoryRunStore()

    async def go() -> list[str]:
        async with assemble(root, client, store=store) as assembly, \
                await assembly.open_session(sessions()) as live:
            texts = []
            for command in ("/workflow", "/workflow survey", "/workflow runs"):
                texts.append((await live.submit(command)).text)
            (run,) = store.list_runs(None, 5)
            texts.append((await live.submit(f"/workflow show {run.id}")).text)
            resumed = await live.submit(f"/workflow resume {run.id}")
            texts.append(resumed.text)
            return texts

    listing, ran, runs, shown, resumed = asyncio.run(go())
    assert "survey" in listing and "project" in listing
    assert ran.endswith("REPORT Summarise: FUNCS / TESTS")
    assert "survey" in runs and "completed" in runs and "3/3 tasks" in runs
    assert "└─ report" in shown and "✓ report/0" in shown
    assert "completed; there is nothing to resume" in resumed


def test_a_workflow_typed_at_the_prompt_runs_as_a_turn_that_an_interrupt_stops(
        tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    held = HeldClient(survey_routes([]))
    store = MemoryRunStore()

    async def go() -> tuple[str, bool]:
        assembly = assemble(root, held, store=store)  # type: ignore[arg-type]
        async with assembly, await assembly.open_session(sessions()) as live:
            assert live.commands is not None
            # A front end's own host runs the command outside any turn, as the REPL does.
            host = SessionCommandHost(live, live.commands)
            outcome = asyncio.ensure_future(live.commands.run("/workflow survey", host))
            await asyncio.wait_for(held.arrived.wait(), 10)
            assert live.status().running_turn is not None  # it runs as a turn
            assert live.interrupt()
            done = await asyncio.wait_for(outcome, 10)
            return done.text, done.is_error

    text, is_error = asyncio.run(go())
    assert is_error and text.startswith("Interrupted: every task of the run was stopped")
    (run,) = store.list_runs(None, 5)
    assert run.state is RunState.INTERRUPTED


def test_goal_runs_rounds_until_its_check_passes(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {})
    steps = [reply("Looked; nothing to change."),
             reply("", ("Read", {"file_path": "calc.py"})),
             reply("", ("Edit", {"file_path": "calc.py", "old_string": "a - b",
                                 "new_string": "a + b"})),
             reply("Fixed.")]

    def step(request: LLMRequest) -> LLMResponse:
        return steps.pop(0)

    client = by_prompt({"make add add": step}, calls=4)

    async def go() -> tuple[str, StopCause]:
        async with assemble(root, client, "Bash(python3 test_calc.py)",
                            mode="acceptEdits") as assembly, \
                await assembly.open_session(sessions()) as live:
            result = await live.submit(
                '/goal --until "python3 test_calc.py" --rounds 3 --tokens 50k make add add')
            return result.text, result.stop

    text, stop = asyncio.run(go())
    assert stop is StopCause.COMMAND, text
    assert "goal  completed" in text and text.rstrip().endswith("Fixed.")
    assert "check `python3 test_calc.py`: passed, round 2 of 3" in text
    assert "a + b" in (root / "calc.py").read_text()


def test_goal_needs_a_check(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {})

    async def go() -> tuple[str, StopCause]:
        async with assemble(root, ScriptedLLMClient(steps=[])) as assembly, \
                await assembly.open_session(sessions()) as live:
            result = await live.submit("/goal make the tests pass")
            return result.text, result.stop

    text, stop = asyncio.run(go())
    assert stop is StopCause.COMMAND_FAILED
    assert "a goal needs a check" in text and "Usage: /goal --until" in text


ASKING = """\
name: asking
stages:
  - name: work
    continue_on_error: true
    tasks:
      - {agent: general-purpose, prompt: "YES write yes.txt"}
      - {agent: general-purpose, prompt: "NO write no.txt"}
"""


def test_a_tasks_own_call_asks_in_the_session_as_its_agent_would(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"asking": ASKING})

    def writes(name: str):  # type: ignore[no-untyped-def]
        steps = [reply("", ("Bash", {"command": f"echo hi > {name}"})), reply(f"{name}: done")]
        return lambda request: steps.pop(0)

    client = by_prompt({"YES": writes("yes.txt"), "NO": writes("no.txt")}, calls=4)
    asked: list[ApprovalRequested] = []

    async def go() -> str:
        async with assemble(root, client) as assembly, \
                await assembly.open_session(sessions()) as live:
            def answer(event: LiveSessionEvent) -> None:
                if isinstance(event, ApprovalRequested):
                    asked.append(event)
                    allowed = "yes.txt" in str(event.request.tool_input)
                    live.answer(event.request.id, ApprovalAnswer(allowed=allowed))

            live.subscribe(answer, answers=True)
            return (await live.submit("/workflow asking")).text

    text = asyncio.run(go())
    assert sorted(str(e.request.tool_input["command"]) for e in asked) == [
        "echo hi > no.txt", "echo hi > yes.txt"]  # each task's Bash asked the person
    assert (root / "yes.txt").read_text() == "hi\n"
    assert not (root / "no.txt").exists()  # refused: the command never ran
    refused = [b for r in client.requests if first_prompt(r).startswith("NO")
               for m in r.messages for b in m.content if type(b).__name__ == "ToolResultBlock"]
    assert [b.is_error for b in refused] == [True]  # type: ignore[attr-defined]
    assert "yes.txt: done" in text and "no.txt: done" in text  # both tasks went on
    # Each question names the task that asks: the two run at once.
    assert sorted(e.request.label for e in asked) == [
        "[work/0] Bash(echo hi > yes.txt)", "[work/1] Bash(echo hi > no.txt)"]
