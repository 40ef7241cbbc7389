"""Approvals without a terminal: the diff preview, the question prompt, the bridge, the
permission commands on a real LiveSession (memory stores, a scripted model) and settings reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from io import StringIO
from pathlib import Path

from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from aimon_cli._approval import (
    LATER,
    TRUST_CHOICES,
    Questions,
    Selection,
    approval_choices,
    choose,
    question_lines,
)
from aimon_cli._replhost import ReplCommandHost
from aimon_cli.render import approval_lines, resolved_line
from aimon_cli.repl import ReplOptions, ReplSession
from aimon_core.agent import Environment, parse_agent
from aimon_core.config import LoadedSettings, TrustStore, load_settings
from aimon_core.live import LiveSession
from aimon_core.llm import LLMClient, reply, script
from aimon_core.permission import (
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalScope,
    PermissionMode,
)
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore
from aimon_core.tools import proposed_change

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")
CALC = "def add(a, b):\n    return a + b\n"


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())


def request(tool: str, **tool_input: object) -> ApprovalRequest:
    return ApprovalRequest(id="r1", tool_name=tool, tool_input=tool_input,
                           subject_text=str(tool_input.get("file_path", "")),
                           reason="no rule allows it", suggested_rule=f"{tool}(calc.py)",
                           agent_rule=f"{tool}(//abs/calc.py)")


# ── the diff preview ─────────────────────────────────────────────────────────────────────


def test_an_edit_preview_applies_old_to_new_on_the_current_file(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(CALC + "x = a + b\n")
    change = proposed_change("Edit", {"file_path": "calc.py", "old_string": "a + b",
                                      "new_string": "a - b", "replace_all": True}, tmp_path)
    assert change is not None and not change.created and not change.note
    assert change.path == tmp_path / "calc.py"
    changed = [line for line in change.diff.splitlines() if line[:1] in "+-"]
    assert changed == ["--- a/calc.py", "+++ b/calc.py", "-    return a + b", "-x = a + b",
                       "+    return a - b", "+x = a - b"]
    twice = proposed_change("Edit", {"file_path": str(tmp_path / "calc.py"),
                                     "old_string": "a + b", "new_string": "a - b"}, tmp_path)
    assert twice is not None and not twice.diff and "occurs 2 times" in twice.note
    missing = proposed_change("Edit", {"file_path": "calc.py", "old_string": "nope",
                                       "new_string": "x"}, tmp_path)
    assert missing is not None and "will fail" in missing.note


def test_a_write_preview_compares_old_and_new_content(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(CALC)
    change = proposed_change("Write", {"file_path": "calc.py", "content": "print(1)\n"},
                             tmp_path)
    assert change is not None and not change.created
    assert "-def add(a, b):" in change.diff and "+print(1)" in change.diff
    new = proposed_change("Write", {"file_path": "new.py", "content": "a\nb\n"}, tmp_path)
    assert new is not None and new.created
    assert new.diff.splitlines()[-2:] == ["+a", "+b"]
    created = proposed_change("Edit", {"file_path": "made.py", "old_string": "",
                                       "new_string": "x = 1\n"}, tmp_path)
    assert created is not None and created.created and "+x = 1" in created.diff
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01")
    binary = proposed_change("Write", {"file_path": "blob.bin", "content": "x"}, tmp_path)
    assert binary is not None and binary.note == "binary file: no preview"
    assert proposed_change("Bash", {"command": "ls"}, tmp_path) is None
    same = proposed_change("Write", {"file_path": "calc.py", "content": CALC}, tmp_path)
    assert same is not None and same.note == "the file would not change"


def test_the_question_shows_the_call_the_diff_capped_and_the_answer(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("".join(f"line {n}\n" for n in range(100)))
    content = "".join(f"new {n}\n" for n in range(100))
    ask = request("Write", file_path=str(tmp_path / "calc.py"), content=content)
    change = proposed_change("Write", ask.tool_input, tmp_path)
    out = StringIO()
    console = Console(file=out, width=100, color_system=None)
    for line in approval_lines(ask, change, tmp_path):
        console.print(line)
    text = out.getvalue()
    assert text.startswith("? Write(calc.py) needs your approval\n  Why: no rule allows it\n")
    assert "  ⎿ Update calc.py with 100 additions and 100 removals\n" in text
    assert "       1 - line 0\n" in text and "more lines" in text
    assert len(text.splitlines()) < 50
    long = "echo " + "x" * 100
    bash_lines = approval_lines(request("Bash", command=long, description="Print x's"), None,
                                tmp_path)
    assert [line.plain for line in bash_lines[1:4]] == [
        "  Print x's", "  Why: no rule allows it", f"  $ {long}"]
    allowed = resolved_line(ApprovalAnswer(allowed=True, scope=ApprovalScope.SESSION),
                            "Bash(npm test)", None)
    assert allowed.plain == "✓ allowed for this session: `npm test`"
    exact = resolved_line(ApprovalAnswer(allowed=True, scope=ApprovalScope.SESSION),
                          "Bash(exact:for i in 1 2; do echo $i; done)", None)
    assert exact.plain == "✓ allowed for this session: `for i in 1 2; do echo $i; done`"
    skill = approval_lines(request("Skill", skill="review", args="3.0"), None, tmp_path)
    assert skill[1].plain == "  with: 3.0"
    denied = resolved_line(ApprovalAnswer(allowed=False, reason="use tabs"), "", ask, tmp_path)
    assert denied.plain == "✗ denied: Write(calc.py) (use tabs)"


def test_choices_name_the_rules_they_remember_in_words() -> None:
    hints = [(c.label, c.hint) for c in approval_choices(request("Edit"), Path("/abs"))
             if c.hint]
    assert hints[0] == ("1 o", "Yes (and edits to calc.py again this turn)")
    assert hints[1] == ("2 y", "Yes, and don't ask again for edits to calc.py in this session")
    assert hints[2][1].startswith("Yes, and always for edits to calc.py, for this agent")
    scoped = replace(request("Edit"), agent_scope="agent tester in /p")
    agent_hint = next(c.hint for c in approval_choices(scoped) if c.value == "agent")
    assert "for agent tester in /p (new sessions too; not other projects)" in agent_hint
    bare = ApprovalRequest(id="x", tool_name="Edit", tool_input={}, subject_text="",
                           reason="", suggested_rule="")
    assert [c.label for c in approval_choices(bare) if c.hint] == ["1 o", "2 n", "Esc"]
    broad = approval_choices(request("Bash"), broader="Bash(python3 -m pytest:*)",
                             editable=True)
    assert [c.hint for c in broad if c.value == "session"] == [
        "Yes, and don't ask again for `python3 -m pytest *` in this session"]
    assert [c.label for c in broad if c.hint][-2:] == ["e", "Esc"]


# ── the one-key question ─────────────────────────────────────────────────────────────────


def test_keys_typed_before_the_question_is_ready_go_to_the_draft() -> None:
    async def test() -> None:
        typed: list[str] = []
        all_typed = asyncio.Event()

        def on_typed(text: str) -> None:
            typed.append(text)
            if len(typed) == 3:
                all_typed.set()

        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            pipe.send_text("any")  # pressed as the question appears: not answers
            asking = asyncio.ensure_future(choose("Trust?", TRUST_CHOICES, done=done,
                                                  on_typed=on_typed, guard=0.3))
            await asyncio.wait_for(all_typed.wait(), 60)  # a bound, not a wait: a busy CI
            assert not asking.done()
            await asyncio.sleep(0.35)  # no key for the guard time: now keys choose
            pipe.send_text("y")
            assert await asking == "yes"
        assert typed == ["a", "n", "y"]
    run(test)


def test_a_shortcut_answers_at_once_and_a_sentence_is_text() -> None:
    choices = approval_choices(request("Bash"))
    assert Selection(choices=choices).key("a") == "agent"
    assert Selection(choices=choices).key("3") == "agent"
    assert Selection(choices=choices).key("n") == "deny"
    sentence = Selection(choices=choices)
    answers = [sentence.key(key) for key in "wait, what does this do?"]
    assert sentence.typing and sentence.typed == "wait, what does this do?"
    assert answers == [None] * len(answers)  # the `a` of "wait" chose nothing
    sentence.move(1)  # an arrow is a deliberate choice again; the text stays
    assert not sentence.typing and sentence.typed == "wait, what does this do?"


def test_a_sentence_typed_into_the_question_answers_nothing_and_is_kept() -> None:
    async def test() -> None:
        typed: list[str] = []
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            asking = asyncio.ensure_future(choose(
                "Allow this Bash call?", approval_choices(request("Bash")), done=done,
                on_typed=typed.append, guard=0))
            pipe.send_text("wait, what does this do?\r")
            await asyncio.sleep(0.2)
            assert not asking.done()
            pipe.send_text("\x1b")
            assert await asking == LATER
        assert typed == ["wait, what does this do?"]
    run(test)


def test_the_choices_wrap_at_word_boundaries_at_50_columns() -> None:
    selection = Selection(choices=approval_choices(replace(
        request("Bash"), agent_scope="agent tester in /home/someone/projects/proj")))
    drawn = "".join(text for _, text in question_lines(
        "Allow this Bash call?", selection, armed=True, width=50, keys="o/y/a/n"))
    lines = drawn.splitlines()
    assert all(len(line) <= 50 for line in lines)
    assert lines[0].startswith("❯ 1 o  Yes (and `calc.py` again this turn)")
    words = set(" ".join(lines).split())
    assert "sessions" in words and "projects)" in words  # no word cut in two


def test_a_question_that_goes_away_ends_the_prompt() -> None:
    async def test() -> None:
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
            asking = asyncio.ensure_future(choose("Trust?", TRUST_CHOICES, done=done,
                                                  on_typed=print, guard=0))
            await asyncio.sleep(0.05)
            done.cancel()
            assert await asking is None
    run(test)


# ── the bridge and the commands, on a real LiveSession ───────────────────────────────────


@contextlib.asynccontextmanager
async def approving_host(tmp_path: Path, client: LLMClient
                         ) -> AsyncIterator[tuple[ReplCommandHost, AgentAssembly, StringIO]]:
    """Yield the REPL as a command host over a runtime built as the command line builds it."""
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    (project / "calc.py").write_text(CALC)
    assembly = build_runtime(project, flags=RuntimeFlags(disallowed=("Bash(rm:*)",)),
                             parts=RuntimeParts(client=client, agent_definition=AGENT))
    store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())

    async def open_session(session_id: str | None) -> LiveSession:
        return await assembly.open_session(store, session_id=session_id)

    out = StringIO()
    repl_options = ReplOptions(project_root=project, store=store, open_session=open_session,
                               history_file=tmp_path / "history",
                               questions=Questions(project), assembly=lambda: assembly)
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        repl = ReplSession(repl_options, console=Console(file=out, width=120, color_system=None))
        try:
            yield repl.host, assembly, out
        finally:
            await repl.aclose()


async def until(condition: Callable[[], object], what: str) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting until {what}")


def edits(project: Path, *pairs: tuple[str, str]) -> list[object]:
    calc = str(project / "calc.py")
    steps: list[object] = [reply("", ("Read", {"file_path": calc}))]
    steps += [reply("", ("Edit", {"file_path": calc, "old_string": old, "new_string": new}))
              for old, new in pairs]
    return steps


def test_pending_approve_and_deny_answer_from_the_command_line(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    client = script(*edits(project, ("a + b", "a - b")), reply("edited"),
                    *edits(project, ("a - b", "a * b")), reply("fine"))

    async def test() -> None:
        async with approving_host(tmp_path, client) as (host, _, out):
            run_command = host.commands.run
            assert (await run_command("/approve", host)).is_error
            live = await host.live_session()
            turn = live.submit_async("edit")
            await until(host.pending_approvals, "the edit waits")
            (waiting,) = host.pending_approvals()
            listing = (await run_command("/pending", host)).text
            assert f"  {waiting.id}  Edit(" in listing and "no rule allows Edit" in listing
            await run_command(f"/approve {waiting.id[:4]}", host)
            assert (await turn).text == "edited"
            assert (project / "calc.py").read_text() == CALC.replace("+", "-")
            assert "✓ allowed for this turn: edits to calc.py" in out.getvalue()

            turn = live.submit_async("again")
            await until(host.pending_approvals, "the second edit waits")
            await run_command("/deny please keep it", host)
            assert (await turn).text == "fine"
            result = client.requests[-1].messages[-1].content[0]
            assert 'The user said: "please keep it"' in str(result)
            assert "✗ denied: Edit(calc.py) (please keep it)" in out.getvalue()
            assert host.pending_approvals() == ()
            assert (await run_command("/pending", host)).text == "No approvals are waiting."
    run(test)


def test_session_and_agent_approvals_are_remembered_shown_and_revoked(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    other = str(project / "other.py")
    client = script(*edits(project, ("a + b", "a - b")), reply("one"),
                    *edits(project, ("a - b", "a * b")), reply("two"),
                    reply("", ("Write", {"file_path": other, "content": "x = 1\n"})),
                    reply("three"))

    async def test() -> None:
        async with approving_host(tmp_path, client) as (host, assembly, _):
            run_command, policy = host.commands.run, assembly.policy
            live = await host.live_session()
            turn = live.submit_async("edit")
            await until(host.pending_approvals, "the edit waits")
            await run_command("/approve session", host)
            await turn
            assert live.record.approvals == ("Edit(calc.py)",)
            await live.submit("edit again")  # allowed for the session: not asked
            assert (project / "calc.py").read_text() == CALC.replace("+", "*")
            turn = live.submit_async("write")
            await until(host.pending_approvals, "the write waits")
            await run_command("/approve agent", host)
            await turn
            assert policy.agent is not None and policy.agent.path.exists()
            shown = (await run_command("/permissions", host)).text
            assert shown.startswith("Mode: default (ask before anything no rule allows).")
            assert "  deny   Bash(rm:*)  command line" in shown
            assert "  this session  Edit(calc.py)" in shown
            assert f"  this agent    Edit(/{project.resolve() / 'other.py'})" in shown
            revoked = (await run_command("/revoke", host)).text
            assert revoked == "Forgot 1 approval of this session: Edit(calc.py)"
            assert live.record.approvals == ()
            gone = (await run_command("/revoke --agent", host)).text
            assert gone.startswith("Forgot 1 approval of this agent") and "deleted" in gone
            assert not policy.agent.path.exists()
            assert (await run_command("/revoke", host)).text == \
                "No approvals of this session were remembered."
    run(test)


def test_mode_switches_and_refuses_what_it_must(tmp_path: Path) -> None:
    async def test() -> None:
        async with approving_host(tmp_path, script()) as (host, assembly, _):
            run_command = host.commands.run
            live = await host.live_session()  # where nobody can be asked, /mode lists
            listing = (await live.submit("/mode")).text
            assert listing.startswith("Permission mode: default")
            assert "plan               read-only" in listing
            done = await run_command("/mode plan", host)
            assert done.text.startswith("Permission mode: plan")
            assert assembly.policy.mode is PermissionMode.PLAN
            unknown = await run_command("/mode fast", host)
            assert unknown.is_error and "unknown permission mode 'fast'" in unknown.text
            bypass = await run_command("/mode bypassPermissions", host)
            if os.geteuid() == 0 and os.environ.get("AIMON_SANDBOX") != "1":
                assert bypass.is_error and "refused when running as root" in bypass.text
                assert assembly.policy.mode is PermissionMode.PLAN
            else:
                assert assembly.policy.mode is PermissionMode.BYPASS
    run(test)


# ── settings reload ──────────────────────────────────────────────────────────────────────


def test_applying_reloaded_settings_replaces_rules_mode_and_hooks(tmp_path: Path) -> None:
    async def test() -> None:
        async with approving_host(tmp_path, script()) as (host, assembly, _):
            project = assembly.project_root
            user = Path(os.environ["AIMON_HOME"]) / "config" / "settings.json"
            user.parent.mkdir(parents=True, exist_ok=True)
            user.write_text(json.dumps({
                "model": "other", "permissions": {"deny": ["Edit"], "defaultMode": "plan"},
                "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}))
            loaded: LoadedSettings = load_settings(project, trust_store=TrustStore())
            errors: list[Exception] = []
            notes = assembly.apply_settings(loaded, errors.append)
            policy = assembly.policy
            assert [r.text for r in policy.rules.deny] == ["Edit", "Bash(rm:*)"]
            assert policy.mode is PermissionMode.PLAN and assembly.settings is loaded
            from aimon_core.hook import HookEvent

            assert assembly.hooks.has_hooks(HookEvent.ON_STOP)
            assert notes == ["permission mode is now plan",
                             "model changes take effect when aimon starts again"]
            assert errors == []
            shown = (await host.commands.run("/permissions", host)).text
            assert f"  deny   Edit        user settings ({user})" in shown
            policy.set_mode(PermissionMode.DEFAULT)
            assembly.flags = RuntimeFlags(permission_mode="default")
            user.write_text(json.dumps({"permissions": {"defaultMode": "acceptEdits"}}))
            assembly.apply_settings(load_settings(project, trust_store=TrustStore()),
                                    errors.append)
            assert policy.mode is PermissionMode.DEFAULT  # the flag wins
            assert policy.rules.deny == ()
    run(test)

