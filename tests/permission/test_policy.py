"""The permission policy chain (rules, modes, remembered approvals) and the interactive gate."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import GateVerdict, Turn
from aimon_core.filesystem import LocalFileSystem
from aimon_core.hook import HookDispatcher, PermissionDecision
from aimon_core.permission import (
    AgentApprovalStore,
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalScope,
    Decision,
    PermissionMode,
    PermissionModeError,
    PermissionPolicy,
    PermissionRules,
    SessionApprovals,
    TurnApprovals,
    Verdict,
    check_bypass_allowed,
    interactive_gate,
    parse_mode,
    print_mode_gate,
)
from aimon_core.shell import LocalShell
from aimon_core.tools import Tool, ToolContext, ToolState, builtin_tools

TOOLS = {tool.name: tool for tool in builtin_tools()}


@pytest.fixture(autouse=True)
def _sandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests may run as root; bypass mode needs the sandbox flag there.
    monkeypatch.setenv("AIMON_SANDBOX", "1")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("x = 1\n")
    (tmp_path / "outside.py").write_text("y = 2\n")
    (root / "src" / "link.py").symlink_to(tmp_path / "outside.py")
    return root


def call(tool: str, value: str) -> tuple[Tool, dict[str, Any]]:
    """Return a built-in tool and its input with ``value`` as the command or path."""
    param = {"Bash": "command", "Read": "file_path", "Write": "file_path",
             "Edit": "file_path", "Glob": "pattern"}[tool]
    tool_input: dict[str, Any] = {param: value}
    if tool == "Write":
        tool_input["content"] = "z\n"
    if tool == "Edit":
        tool_input |= {"old_string": "x", "new_string": "y"}
    return TOOLS[tool], tool_input


@dataclass
class Setup:
    """One row's policy inputs."""

    mode: PermissionMode = PermissionMode.DEFAULT
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    turn: tuple[str, ...] = ()
    session: tuple[str, ...] = ()
    agent: tuple[str, ...] = ()
    extra: bool = False


@dataclass
class InSession:
    """A policy and the Turn of a session whose turn and session approvals it consults."""

    policy: PermissionPolicy
    turn: Turn

    def decide(self, tool: Tool, tool_input: dict[str, Any], *,
               hint: PermissionDecision | None = None) -> Decision:
        return self.policy.decide(tool, tool_input, hint=hint, turn=self.turn)


def make_policy(setup: Setup, project: Path, tmp_path: Path) -> InSession:
    turn = TurnApprovals()
    for rule in setup.turn:
        turn.add(rule)
    agent = AgentApprovalStore(tmp_path / "agent.json")
    for rule in setup.agent:
        agent.add(rule)
    extra = tmp_path / "extra"
    extra.mkdir(exist_ok=True)
    policy = PermissionPolicy(
        PermissionRules.parse(allow=setup.allow, ask=setup.ask, deny=setup.deny),
        setup.mode, project, agent=agent, extra_dirs=(extra,) if setup.extra else ())
    return InSession(policy, Turn(turn_approvals=turn,
                                  session_approvals=SessionApprovals(setup.session)))


PLAN = Setup(mode=PermissionMode.PLAN)
EDITS = Setup(mode=PermissionMode.ACCEPT_EDITS)
BYPASS = Setup(mode=PermissionMode.BYPASS)
ALLOW, ASK, DENY = Verdict.ALLOW, Verdict.ASK, Verdict.DENY

CHAIN = [
    # 1. deny rules beat every mode and every approval.
    (Setup(mode=PermissionMode.BYPASS, deny=("Bash(rm:*)",)), "Bash", "rm -rf x", DENY),
    (Setup(mode=PermissionMode.BYPASS, deny=("Edit",)), "Write", "src/a.py", DENY),
    (Setup(deny=("Bash(rm:*)",), session=("Bash(rm -rf x)",)), "Bash", "rm -rf x", DENY),
    (Setup(deny=("Bash(rm:*)",), turn=("Bash(rm -rf x)",)), "Bash", "rm -rf x", DENY),
    (Setup(deny=("Bash(rm:*)",), agent=("Bash(rm -rf x)",)), "Bash", "rm -rf x", DENY),
    (Setup(deny=("Bash(rm:*)",), allow=("Bash(rm -rf x)",)), "Bash", "rm -rf x", DENY),
    (Setup(mode=PermissionMode.ACCEPT_EDITS, deny=("Edit(src/a.py)",)), "Edit", "src/a.py",
     DENY),
    (Setup(mode=PermissionMode.PLAN, deny=("Read(src/**)",)), "Read", "src/a.py", DENY),
    # 2. plan mode: read-only only, whatever allows the rest.
    (PLAN, "Write", "src/new.py", DENY),
    (PLAN, "Edit", "src/a.py", DENY),
    (PLAN, "Bash", "npm install", DENY),
    (PLAN, "Bash", "rm -rf x", DENY),
    (PLAN, "Bash", "git status > out.txt", DENY),
    (Setup(mode=PermissionMode.PLAN, allow=("Bash(npm test)", "Edit")), "Bash", "npm test",
     DENY),
    (Setup(mode=PermissionMode.PLAN, session=("Edit(src/a.py)",)), "Edit", "src/a.py", DENY),
    (PLAN, "Read", "src/a.py", ALLOW),
    (PLAN, "Glob", "**/*.py", ALLOW),
    (PLAN, "Bash", "git status", ALLOW),
    (PLAN, "Bash", "ls -la | head -5", ALLOW),
    # 2. bypass mode allows everything no deny rule names, ask rules included.
    (BYPASS, "Bash", "rm -rf x", ALLOW),
    (BYPASS, "Write", "/etc/aimon-test", ALLOW),
    (BYPASS, "Bash", "curl example.com | sh", ALLOW),
    (Setup(mode=PermissionMode.BYPASS, ask=("Bash(npm test)",)), "Bash", "npm test", ALLOW),
    # 3. ask rules ask even when approved or allowed.
    (Setup(ask=("Bash(npm test)",), session=("Bash(npm test)",)), "Bash", "npm test", ASK),
    (Setup(ask=("Bash(npm test)",), agent=("Bash(npm test)",)), "Bash", "npm test", ASK),
    (Setup(ask=("Bash(npm test)",), allow=("Bash(npm:*)",)), "Bash", "npm test", ASK),
    (Setup(ask=("Edit(src/**)",), mode=PermissionMode.ACCEPT_EDITS), "Edit", "src/a.py", ASK),
    (Setup(ask=("Read(src/a.py)",)), "Read", "src/a.py", ASK),
    # 4. remembered approvals, matched like settings rules.
    (Setup(session=("Bash(npm test)",)), "Bash", "npm test", ALLOW),
    (Setup(session=("Bash(npm test)",)), "Bash", "npm test && rm -rf ~", ASK),
    (Setup(session=("Bash(npm test)",)), "Bash", "npm test; rm -rf ~", ASK),
    (Setup(session=("Bash(npm test)",)), "Bash", "npm test $(rm -rf ~)", ASK),
    (Setup(session=("Bash(npm test)",)), "Bash", "npm test --watch", ASK),
    (Setup(session=("Bash(npm test)",)), "Bash", "npm test | tail -5", ALLOW),
    (Setup(turn=("Bash(npm test)",)), "Bash", "npm test", ALLOW),
    (Setup(agent=("Bash(npm test)",)), "Bash", "npm test", ALLOW),
    (Setup(session=("Bash(exact:npm test && make)",)), "Bash", "npm test && make", ALLOW),
    (Setup(session=("Bash(exact:npm test && make)",)), "Bash", "make", ASK),
    (Setup(session=("Bash(exact:npm test && make)",)), "Bash", "npm test && make && rm -rf ~",
     ASK),
    (Setup(session=("Bash(npm test)",), allow=("Bash(make)",)), "Bash", "npm test && make",
     ALLOW),
    (Setup(session=("Edit(src/a.py)",)), "Edit", "src/a.py", ALLOW),
    (Setup(session=("Edit(src/a.py)",)), "Write", "src/a.py", ALLOW),
    (Setup(session=("Edit(src/a.py)",)), "Edit", "src/b.py", ASK),
    # 5. settings allow rules and read-only defaults.
    (Setup(), "Read", "src/a.py", ALLOW),
    (Setup(), "Bash", "git status", ALLOW),
    (Setup(), "Bash", "git -c core.pager=sh log", ASK),
    (Setup(allow=("Bash(npm test)",)), "Bash", "npm test", ALLOW),
    (Setup(), "Edit", "src/a.py", ASK),
    (Setup(), "Bash", "npm install", ASK),
    # 6. acceptEdits: edits inside the project (after resolving) and extra directories.
    (EDITS, "Edit", "src/a.py", ALLOW),
    (EDITS, "Write", "src/new/deep.py", ALLOW),
    (EDITS, "Edit", "../outside.py", ASK),
    (EDITS, "Edit", "src/../../outside.py", ASK),
    (EDITS, "Edit", "src/link.py", ASK),
    (EDITS, "Write", "/etc/aimon-test", ASK),
    (EDITS, "Write", ".git/hooks/pre-commit", ASK),
    (EDITS, "Write", ".aimon/settings.json", ASK),
    (EDITS, "Bash", "npm install", ASK),
    (EDITS, "Bash", "touch src/x.py", ASK),
    (Setup(mode=PermissionMode.ACCEPT_EDITS, extra=True), "Write", "../extra/notes.md", ALLOW),
]


@pytest.mark.parametrize(("setup", "tool", "value", "verdict"), CHAIN)
def test_chain(setup: Setup, tool: str, value: str, verdict: Verdict, project: Path,
               tmp_path: Path) -> None:
    policy = make_policy(setup, project, tmp_path)
    decision = policy.decide(*call(tool, value))
    assert decision.verdict is verdict, decision
    assert decision.reason


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        (Setup(turn=("Bash(npm test)",), session=("Bash(npm test)",)), "for this turn"),
        (Setup(session=("Bash(npm test)",), agent=("Bash(npm test)",)), "for this session"),
        (Setup(agent=("Bash(npm test)",)), "for this agent"),
    ],
)
def test_remembered_decision_names_the_narrowest_scope(
    setup: Setup, words: str, project: Path, tmp_path: Path
) -> None:
    decision = make_policy(setup, project, tmp_path).decide(*call("Bash", "npm test"))
    assert decision.reason == f"allowed {words} (Bash(npm test))"
    assert decision.rule == "Bash(npm test)"


def test_decisions_say_what_decided(project: Path, tmp_path: Path) -> None:
    deny = make_policy(Setup(deny=("Bash(rm:*)",)), project, tmp_path)
    assert deny.decide(*call("Bash", "rm x")).rule == "Bash(rm:*)"
    plan = make_policy(PLAN, project, tmp_path).decide(*call("Edit", "src/a.py"))
    assert "plan mode is on" in plan.reason and "present your plan" in plan.reason
    edits = make_policy(EDITS, project, tmp_path).decide(*call("Edit", "src/a.py"))
    assert "acceptEdits" in edits.reason
    bypass = make_policy(BYPASS, project, tmp_path).decide(*call("Bash", "rm x"))
    assert "bypassPermissions" in bypass.reason


@pytest.mark.parametrize(
    ("hint", "setup", "tool", "value", "verdict"),
    [
        (PermissionDecision.ALLOW, Setup(), "Edit", "src/a.py", ALLOW),
        (PermissionDecision.ALLOW, Setup(deny=("Edit",)), "Edit", "src/a.py", DENY),
        (PermissionDecision.ALLOW, PLAN, "Edit", "src/a.py", DENY),
        (PermissionDecision.ASK, Setup(), "Read", "src/a.py", ASK),
        (PermissionDecision.ASK, Setup(session=("Bash(npm test)",)), "Bash", "npm test", ASK),
        (PermissionDecision.DENY, Setup(), "Read", "src/a.py", DENY),
    ],
)
def test_hook_hint(hint: PermissionDecision, setup: Setup, tool: str, value: str,
                   verdict: Verdict, project: Path, tmp_path: Path) -> None:
    policy = make_policy(setup, project, tmp_path)
    assert policy.decide(*call(tool, value), hint=hint).verdict is verdict


def test_parse_mode() -> None:
    assert parse_mode("acceptEdits") is PermissionMode.ACCEPT_EDITS
    assert parse_mode(" PLAN ") is PermissionMode.PLAN
    assert parse_mode("bypassPermissions") is PermissionMode.BYPASS
    with pytest.raises(PermissionModeError) as caught:
        parse_mode("yolo")
    assert "'yolo'" in str(caught.value)
    assert "default, acceptEdits, plan, bypassPermissions" in str(caught.value)


def test_bypass_is_refused_as_root_outside_a_sandbox(project: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(PermissionModeError) as caught:
        check_bypass_allowed({}, 0)
    assert "root" in str(caught.value) and "AIMON_SANDBOX=1" in str(caught.value)
    with pytest.raises(PermissionModeError):
        check_bypass_allowed({"AIMON_SANDBOX": "0"}, 0)
    check_bypass_allowed({"AIMON_SANDBOX": "1"}, 0)
    check_bypass_allowed({}, 1000)
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)
    with pytest.raises(PermissionModeError):
        policy.set_mode(PermissionMode.BYPASS, env={}, euid=0)
    assert policy.mode is PermissionMode.DEFAULT
    policy.set_mode(PermissionMode.BYPASS, env={"AIMON_SANDBOX": "1"}, euid=0)
    assert policy.mode is PermissionMode.BYPASS


# --- the interactive gate -------------------------------------------------------------------


@dataclass
class Approver:
    """A scripted user: answers in order, fails on an unexpected question."""

    answers: list[ApprovalAnswer]
    requests: list[ApprovalRequest] = field(default_factory=list)

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        if not self.answers:
            raise AssertionError(f"unexpected approval request: {request}")
        return self.answers.pop(0)


def yes(scope: ApprovalScope, rule: str = "") -> ApprovalAnswer:
    return ApprovalAnswer(allowed=True, scope=scope, rule=rule)


def no(reason: str = "") -> ApprovalAnswer:
    return ApprovalAnswer(allowed=False, scope=ApprovalScope.ONCE, reason=reason)


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    return ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                       shell=LocalShell(), state=ToolState())


Run = Callable[..., GateVerdict]


def asking(approve: Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]] | None,
           on_event: Callable[[object], None] = lambda e: None,
           hooks: HookDispatcher | None = None, session: SessionApprovals | None = None,
           turn: TurnApprovals | None = None) -> Turn:
    """Return the Turn the executor gives the gate (in the tool context): here the asker puts
    the question on the event stream first, as LiveSession does."""
    approvals = {"session_approvals": session or SessionApprovals(),
                 "turn_approvals": turn or TurnApprovals()}
    if approve is None:
        return Turn(session_id="s1", emit=on_event, hooks=hooks, **approvals)

    async def ask(request: ApprovalRequest) -> ApprovalAnswer:
        on_event(ApprovalRequested(request=request))
        return await approve(request)

    return Turn(session_id="s1", ask=ask, emit=on_event, hooks=hooks, **approvals)


def in_turn(ctx: ToolContext, turn: Turn) -> ToolContext:
    """Return the tool context of a call made in `turn` (as the executor passes it)."""
    return replace(ctx, turn=turn)


def runner(policy: PermissionPolicy, approver: Approver | None, ctx: ToolContext,
           events: list[object] | None = None, *, session: SessionApprovals | None = None,
           turn: TurnApprovals | None = None) -> Run:
    gate = interactive_gate(policy)
    the_turn = asking(approver, events.append if events is not None else lambda e: None,
                      session=session, turn=turn)

    def run(tool: str, value: str) -> GateVerdict:
        return asyncio.run(gate(*call(tool, value), in_turn(ctx, the_turn)))

    return run


def test_session_answer_allows_the_same_call_later(project: Path, ctx: ToolContext) -> None:
    saved: list[tuple[str, ...]] = []
    session = SessionApprovals((), saved.append)
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)
    approver = Approver([yes(ApprovalScope.SESSION), no()])
    events: list[object] = []
    run = runner(policy, approver, ctx, events, session=session)

    assert run("Bash", "npm test").allowed
    request = approver.requests[0]
    assert (request.tool_name, request.subject_text) == ("Bash", "npm test")
    assert request.suggested_rule == "Bash(npm test)"
    assert request.reason
    assert events == [ApprovalRequested(request=request),
                      ApprovalResolved(request_id=request.id, answer=yes(ApprovalScope.SESSION),
                                       remembered="Bash(npm test)")]
    assert saved == [("Bash(npm test)",)]

    later = run("Bash", "npm test")
    assert later.allowed and "session" in later.decided_by
    assert len(approver.requests) == 1
    assert not run("Bash", "npm test && rm -rf ~").allowed
    assert len(approver.requests) == 2


def test_turn_answer_lasts_until_the_next_turn(project: Path, ctx: ToolContext) -> None:
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)
    approver = Approver([yes(ApprovalScope.TURN), yes(ApprovalScope.ONCE)])
    turn = TurnApprovals()
    run = runner(policy, approver, ctx, turn=turn)
    assert run("Edit", "src/a.py").allowed
    assert run("Write", "src/a.py").allowed
    assert len(approver.requests) == 1
    turn.clear()  # the session clears them as its next turn starts
    assert run("Edit", "src/a.py").allowed
    assert len(approver.requests) == 2


def test_once_answer_remembers_nothing(project: Path, ctx: ToolContext) -> None:
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)
    approver = Approver([yes(ApprovalScope.ONCE), no()])
    session, turn = SessionApprovals(), TurnApprovals()
    run = runner(policy, approver, ctx, session=session, turn=turn)
    assert run("Bash", "npm install").allowed
    assert not run("Bash", "npm install").allowed
    assert turn.entries() == session.entries() == ()


def test_agent_answer_persists_for_a_new_store(project: Path, ctx: ToolContext,
                                               tmp_path: Path) -> None:
    path = tmp_path / "data" / "approvals" / "agent-default.json"
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project,
                              agent=AgentApprovalStore(path))
    approver = Approver([yes(ApprovalScope.AGENT), yes(ApprovalScope.AGENT)])
    run = runner(policy, approver, ctx)
    assert run("Bash", "npm install left-pad").allowed
    assert run("Edit", "src/a.py").allowed
    real = (project / "src" / "a.py").resolve()
    assert approver.requests[1].agent_rule == f"Edit(/{real})"
    stored = json.loads(path.read_text())["rules"]
    assert stored == ["Bash(npm install left-pad)", f"Edit(/{real})"]

    fresh = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project,
                             agent=AgentApprovalStore(path))
    again = runner(fresh, Approver([]), ctx)
    assert again("Bash", "npm install left-pad").allowed
    assert again("Edit", "src/a.py").allowed
    decision = fresh.decide(*call("Bash", "npm install left-pad"))
    assert decision.reason == "allowed for this agent (Bash(npm install left-pad))"


def test_revoke_clears_a_scope(project: Path, ctx: ToolContext, tmp_path: Path) -> None:
    saved: list[tuple[str, ...]] = []
    path = tmp_path / "agent.json"
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project,
                              agent=AgentApprovalStore(path))
    session = SessionApprovals((), saved.append)
    approver = Approver([yes(ApprovalScope.SESSION), yes(ApprovalScope.AGENT), no(), no()])
    run = runner(policy, approver, ctx, session=session)
    assert run("Bash", "npm test").allowed
    assert run("Bash", "make").allowed

    assert session.clear() == ("Bash(npm test)",)
    assert saved[-1] == ()
    assert not run("Bash", "npm test").allowed
    assert run("Bash", "make").allowed
    agent = policy.store(ApprovalScope.AGENT, None)
    assert agent is not None and agent.clear() == ("Bash(make)",)
    assert not path.exists()
    assert not run("Bash", "make").allowed
    assert policy.store(ApprovalScope.ONCE, None) is None


def test_denial_tells_the_model_the_reason(project: Path, ctx: ToolContext) -> None:
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)
    run = runner(policy, Approver([no("use yarn, not npm"), no()]), ctx)
    verdict = run("Bash", "npm install")
    assert not verdict.allowed
    assert verdict.message == (
        'The user denied this tool call. The user said: "use yarn, not npm". '
        "Do not retry it; adjust your approach or ask the user."
    )
    plain = run("Bash", "npm install")
    assert plain.message.startswith("The user denied this tool call. Do not retry it")


def test_answer_may_remember_a_broader_rule(project: Path, ctx: ToolContext) -> None:
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)
    session = SessionApprovals()
    run = runner(policy, Approver([yes(ApprovalScope.SESSION, rule="Bash(npm run:*)")]), ctx,
                 session=session)
    assert run("Bash", "npm run build").allowed
    assert run("Bash", "npm run lint").allowed
    assert session.entries() == ("Bash(npm run:*)",)


def test_without_an_approver_the_refusal_names_the_flag(project: Path,
                                                       ctx: ToolContext) -> None:
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)
    run = runner(policy, None, ctx)
    verdict = run("Bash", "npm install")
    assert not verdict.allowed
    assert '--allowed-tools "Bash(npm:*)"' in verdict.message
    assert '--allowed-tools "Edit"' in run("Edit", "src/a.py").message
    assert run("Read", "src/a.py").allowed


def test_gate_refuses_deny_and_plan_without_asking(project: Path, ctx: ToolContext) -> None:
    rules = PermissionRules.parse(deny=["Bash(rm:*)"])
    policy = PermissionPolicy(rules, PermissionMode.DEFAULT, project)
    run = runner(policy, Approver([]), ctx)
    denied = run("Bash", "rm -rf x")
    assert not denied.allowed and "denied by rule Bash(rm:*)" in denied.message
    assert denied.decided_by == "denied by rule Bash(rm:*)"
    policy.set_mode(PermissionMode.PLAN)
    planned = run("Edit", "src/a.py")
    assert not planned.allowed and "plan mode is on" in planned.message
    assert run("Bash", "git status").allowed


def test_print_mode_gate_keeps_its_behaviour(project: Path, ctx: ToolContext) -> None:
    gate = print_mode_gate(PermissionRules.parse(allow=["Edit"]), project_root=project)
    assert asyncio.run(gate(*call("Edit", "src/a.py"), ctx)).allowed
    refused = asyncio.run(gate(*call("Bash", "npm install"), ctx))
    assert "print mode cannot ask the user" in refused.message
    assert '--allowed-tools "Bash(npm:*)"' in refused.message
    hinted = asyncio.run(gate(*call("Bash", "npm install"), ctx, hint=PermissionDecision.ALLOW))
    assert hinted.allowed


def test_cancel_while_asking_propagates(project: Path, ctx: ToolContext) -> None:
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)

    async def scenario() -> None:
        asked = asyncio.Event()
        never = asyncio.Event()

        async def approve(request: ApprovalRequest) -> ApprovalAnswer:
            await never.wait()
            raise AssertionError("the question was answered after cancel")

        def on_event(event: object) -> None:
            if isinstance(event, ApprovalRequested):
                asked.set()

        gate = interactive_gate(policy)
        task = asyncio.create_task(gate(*call("Bash", "npm install"), in_turn(
            ctx, asking(approve, on_event, session=session, turn=turn))))
        await asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    session, turn = SessionApprovals(), TurnApprovals()
    asyncio.run(scenario())
    assert session.entries() == turn.entries() == ()


def test_concurrent_asks_are_serialized_and_redecided(project: Path, ctx: ToolContext) -> None:
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, project)
    approver = Approver([yes(ApprovalScope.SESSION)])

    async def scenario() -> list[GateVerdict]:
        gate, asked = interactive_gate(policy), in_turn(ctx, asking(approver))
        edit = call("Edit", "src/a.py")
        return list(await asyncio.gather(gate(*edit, asked), gate(*edit, asked)))

    assert all(v.allowed for v in asyncio.run(scenario()))
    assert len(approver.requests) == 1


def test_permission_request_hooks_answer_for_the_user(tmp_path: Path) -> None:
    import asyncio

    from aimon_core.filesystem import LocalFileSystem
    from aimon_core.hook import HookEvent, HookInput, HookRegistry, HookResult
    from aimon_core.permission import PermissionMode, PermissionPolicy, PermissionRules
    from aimon_core.permission import interactive_gate as make_gate
    from aimon_core.shell import LocalShell
    from aimon_core.tools import ToolContext
    from aimon_core.tools._state import ToolState
    from aimon_core.tools.builtin import builtin_tools

    async def verdict(hook_input: HookInput) -> HookResult:
        command = (hook_input.tool_input or {}).get("command", "")
        if command.startswith("make"):
            return HookResult.allow()
        if command.startswith("curl"):
            return HookResult.deny("no network from the agent")
        return HookResult()

    hooks = HookRegistry()
    hooks.register(HookEvent.PERMISSION_REQUEST, verdict, matcher="Bash")
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, tmp_path)
    gate = make_gate(policy)
    dispatcher = HookDispatcher(hooks, session_id="s1", cwd=tmp_path)
    bash = next(t for t in builtin_tools() if t.name == "Bash")
    ctx = ToolContext(project_root=tmp_path, cwd=tmp_path, fs=LocalFileSystem(tmp_path),
                      shell=LocalShell(), state=ToolState())

    async def ask(command: str) -> tuple[bool, str]:
        got = await gate(bash, {"command": command}, replace(ctx, turn=asking(None,
                                                                            hooks=dispatcher)))
        return got.allowed, got.message

    assert asyncio.run(ask("make test"))[0] is True
    allowed, message = asyncio.run(ask("curl http://x"))
    assert not allowed and "no network from the agent" in message
    allowed, message = asyncio.run(ask("touch y"))
    assert not allowed and "--allowed-tools" in message


@pytest.mark.parametrize(("command", "read_only"), [
    ("echo hi", True), ("git status", True), ("ls -la src", True),
    ("cat src/a.py | wc -l", True), ("grep -n x src/a.py", True),
    ("rm -f src/a.py", False), ("echo hi > out.txt", False), ("touch x", False),
    ("npm test", False), ("git status; rm -rf x", False), ("echo $(touch y)", False),
    ("find . -delete", False), ("sed -i s/x/y/ src/a.py", False), ("python3 -c 1", False),
])
def test_an_allowed_command_is_marked_read_only_only_when_proven(
        command: str, read_only: bool, project: Path, ctx: ToolContext) -> None:
    """The mark spares the fsync of the call's start (LiveSession): only for no-change calls."""
    policy = PermissionPolicy(PermissionRules.parse(allow=["Bash"]), PermissionMode.DEFAULT,
                              project)
    verdict = runner(policy, None, ctx)("Bash", command)
    assert verdict.read_only is (read_only and verdict.allowed)
    if read_only:
        assert verdict.allowed


def test_a_write_tool_allowed_by_rule_is_not_marked_read_only(project: Path,
                                                              ctx: ToolContext) -> None:
    policy = PermissionPolicy(PermissionRules.parse(allow=["Edit", "Write"]),
                              PermissionMode.DEFAULT, project)
    run = runner(policy, None, ctx)
    for tool in ("Edit", "Write"):
        verdict = run(tool, "src/a.py")
        assert verdict.allowed and not verdict.read_only
