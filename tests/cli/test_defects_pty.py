"""The rough edges a new user hit (issue 26: the defects, m1-m17, p1-p14), each shown in a
real pseudo-terminal against the loopback model.

Stories share an `aimon` process where they can; every check names the item it shows, and
one that fails does not stop the story (`Checks`). Every wait is on screen text.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pexpect
import pytest

from aimon_core.agent import INTERRUPTED_RESULT
from aimon_core.testing import Fault, LoopbackModelServer, Reply, ScriptedToolCall, StallStream

from .conftest import AIMON, Checks, Spawn, editor_live, leave, screen_text, wait_prompt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def bash(command: str, description: str = "Run it") -> Reply:
    return Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
        "command": command, "description": description}),))


def write(path: Path, content: str) -> Reply:
    return Reply(tool_calls=(ScriptedToolCall(name="Write", input={
        "file_path": str(path), "content": content}),))


def final_screen(child: pexpect.spawn) -> list[str]:
    """Return the rows a terminal shows after all `child` wrote (erased text is gone)."""
    from .test_resize_pty import Terminal

    terminal = Terminal(40, 120)
    terminal.feed(child.logfile_read.getvalue())
    return terminal.everything()


def keep_planning(child: pexpect.spawn, checks: Checks) -> None:
    """Answer an answer's plan question in plan mode: keep planning."""
    checks.see("plan step", "Start on this plan?")
    checks.see("plan step", "] ↑/↓ Enter")
    child.send("n")
    wait_prompt(child)


def test_reload_undo_and_compact(spawn: Spawn, server: LoopbackModelServer,
                                 project: Path) -> None:
    longer = "A summary that is far longer than the conversation it replaces. " * 60
    server.add(write(project / "made.txt", "one\n"), Reply(text="Made it."),
               Reply(text="Nothing to change."),
               StallStream(reply=Reply(text="the summary"), after_events=1, seconds=30,
                           released=True),
               Reply(text=longer),
               Reply(text="Changelog for 2.1 written."))
    child = spawn("--permission-mode", "acceptEdits")
    checks = Checks(child)
    editor_live(child)
    child.send("make a file\r")
    checks.see("prompt 1", "Made it.")
    wait_prompt(child)
    child.send("look only\r")
    checks.see("prompt 2", "Nothing to change.")
    wait_prompt(child)
    child.send("/undo\r")  # prompt 2 changed nothing: step past it to prompt 1
    checks.see("/undo steps past", "Prompt 2 changed no files, so this undoes prompt 1.")
    checks.see("/undo steps past", "· Esc cancels] ↑/↓ Enter")
    child.send("y")
    checks.see("/undo steps past", "Restored the files as they were before prompt 1")
    wait_prompt(child)
    checks.check("/undo steps past", not (project / "made.txt").exists(), "made.txt is gone")
    child.send("/compact\r")
    checks.see("/compact progress", "compacting the conversation")
    checks.see("/compact progress", "Esc/Ctrl-C to cancel")
    child.sendcontrol("c")
    checks.see("/compact cancel", "Cancelled /compact")
    child.sendcontrol("c")  # a second Ctrl-C at the empty prompt never leaves at once
    checks.see("/compact cancel", "Press Ctrl-C again to exit")
    server.release()
    child.send("/status\r")
    checks.see("/compact cancel", "Totals")  # aimon is still there
    wait_prompt(child)
    child.send("/compact\r")
    checks.see("m9 compact saves nothing", "Nothing saved: a summary would be as long as")
    wait_prompt(child)
    skill = project / ".aimon" / "skills" / "changelog"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: changelog\ndescription: Write a changelog "
                                    "entry.\n---\nWrite the changelog entry for $1.\n")
    checks.see("reload skills", "skills, subagents and commands reloaded: +/changelog")
    wait_prompt(child)
    checks.check("reload skills", "-/bg" not in screen_text(child), "aimon's /bg was dropped")
    child.send("/changelog 2.1\r")
    checks.see("reload skills", "Changelog for 2.1 written.")
    wait_prompt(child)
    checks.check("reload skills", "Write the changelog entry for 2.1." in json.dumps(
        server.requests[-1].body), "the new skill's body was the prompt")
    leave(child)
    checks.done()


def test_queued_prompts_keep_the_answer_whole_and_come_back_when_dropped(
        spawn: Spawn, server: LoopbackModelServer) -> None:
    server.add(StallStream(reply=Reply(text="Half a word is here.\n\nAnd more."),
                           after_events=2, seconds=30, released=True),
               Reply(text="The second answer."),
               StallStream(reply=Reply(text="Slow answer."), after_events=1, seconds=30,
                           released=True))
    child = spawn()
    checks = Checks(child)
    editor_live(child)
    child.send("first\r")
    checks.see("queued", "Esc/Ctrl-C to interrupt")
    child.send("second prompt\r")
    checks.see("queued", "⧗ queued: second prompt")
    server.release()
    checks.see("queued", "The second answer.")
    wait_prompt(child)
    shown = screen_text(child)
    checks.check("queued", "Half a word is here." in shown.replace("\n", " "),
                 "the answer was printed whole")
    checks.check("queued", shown.find("And more.") < shown.rfind("› second prompt"),
                 "the queued prompt is echoed where it runs")
    child.send("slow\r")
    checks.see("m7 dropped prompts", "Esc/Ctrl-C to interrupt")
    child.send("dropped prompt\r")
    checks.see("m7 dropped prompts", "⧗ queued: dropped prompt")
    child.sendcontrol("c")
    checks.see("m7 dropped prompts", "1 queued prompt put back in the input box")
    checks.see("m7 dropped prompts", "› dropped prompt")
    server.release()
    child.sendcontrol("u")
    leave(child)
    checks.done()


def test_subagents_render_like_turns_and_a_resume_replays_what_happened(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    calc = str(project / "calc.py")
    server.add(
        Reply(tool_calls=(ScriptedToolCall(name="Read", input={"file_path": calc}),)),
        Reply(text="## Found\n\n- **calc.py:1** defines `add`\n"),
        Reply(tool_calls=(ScriptedToolCall(name="Task", input={
            "description": "Find add", "prompt": "Where is add?", "subagent_type": "explore"}),)),
        Reply(tool_calls=(ScriptedToolCall(name="Grep", input={"pattern": "def add"}),)),
        Reply(text="calc.py:1"),
        Reply(text="It is in calc.py."),
        bash("rm -rf build", "Clean"), Reply(text="Not cleaned."),
        bash("sleep 30"))
    child = spawn("--permission-mode", "plan")
    checks = Checks(child)
    editor_live(child)
    child.send("/task explore find add\r")
    checks.see("m1 subagent header first", "● explore(find add)")
    checks.see("p10 subagent steps", "⎿ Read(calc.py)")
    checks.see("m1 subagent answer", "Done (1 tool call")
    checks.see("m1 markdown", "Found")
    checks.see("m1 markdown", "calc.py:1 defines add")  # bold and code marks rendered
    checks.see("m1 cost line", " in · ")
    wait_prompt(child)
    shown = screen_text(child)
    checks.check("m1 markdown", "## Found" not in shown and "**calc.py" not in shown,
                 "the answer was not raw Markdown")
    child.send("where is add?\r")
    checks.see("p10 Task first", "● Task(Find add)")
    checks.see("p10 Task first", "⎿ Grep(\"def add\")")
    checks.see("p10 Task first", "It is in calc.py.")
    keep_planning(child, checks)
    child.send("clean up\r")
    checks.see("p14 denied bullet", "✗ Bash(rm -rf build)")
    checks.see("p14 denied bullet", "Not cleaned.")
    keep_planning(child, checks)
    checks.check("p14 denied bullet", "● Bash(rm -rf build)" not in screen_text(child),
                 "a denied call has the bullet of one that ran")
    child.send("/mode default\r")
    wait_prompt(child)
    child.send("wait\r")
    checks.see("m6 replay", "Bash(sleep 30) needs your approval")
    checks.see("m6 replay", "] ↑/↓ Enter")
    child.sendcontrol("c")
    checks.see("m6 replay", "Interrupted. Partial output is kept")
    session_id = leave(child)
    resumed = spawn("--resume", session_id, first=None)
    checks.child = resumed
    checks.see("m6 replay", f"Resumed session {session_id} (")
    checks.see("m6 replay", "› clean up")
    checks.see("m6 replay", "✗ Bash(rm -rf build)")
    checks.see("m6 replay", "Not cleaned.")
    checks.see("m6 replay", "› wait")
    checks.see("m6 replay", "✗ Bash(sleep 30)")
    checks.see("m6 replay", INTERRUPTED_RESULT[:40])
    checks.see("m6 replay", "⚠ No answer: the turn was interrupted or stopped by a limit.")
    wait_prompt(resumed)
    checks.check("p3 no stray rule", "──" not in screen_text(resumed), "a rule line was drawn")
    leave(resumed)
    checks.done()


def test_time_limit_stops_a_command_and_a_hook_error_follows_its_call(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    settings = project / ".aimon" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"PostToolUse": [{"matcher": "Read", "hooks": [
        {"type": "command", "command": "echo 'lint failed: style' >&2; exit 1"}]}]}}))
    calc = str(project / "calc.py")
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Read", input={"file_path": calc}),)),
               Reply(text="Read it."),
               bash("for i in 1 2 3 4 5 6 7 8 9 10; do echo tick-$i; sleep 1; done"))
    child = spawn("--allowed-tools", "Bash(for:*)", first="Trust this folder?")
    checks = Checks(child)
    checks.see("trust", "] ↑/↓ Enter", exact=True)
    child.send("y")
    wait_prompt(child)
    child.send("read calc\r")
    checks.see("m13 hook after its call", "● Read(calc.py)")
    checks.see("m13 hook after its call", "lint failed: style")
    checks.see("m13 hook after its call", "Read it.")
    wait_prompt(child)
    child.send("/budget time 3s\r")
    wait_prompt(child)
    started = time.monotonic()
    child.send("count\r")
    checks.see("m8 time limit", "] ↑/↓ Enter", exact=True)
    child.send("o")
    checks.see("m8 time limit", "tick-2")
    checks.see("m8 time limit", "Stopped: reached the time limit (3 s)")
    checks.check("m8 time limit", time.monotonic() - started < 9, "the command ran on")
    wait_prompt(child)
    leave(child)
    checks.done()


def test_start_up_and_print_mode(spawn: Spawn, server: LoopbackModelServer, project: Path,
                                 home: Path) -> None:
    claude = project / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(json.dumps({"statusLine": {"type": "command"}}))
    server.add(Reply(text="pong"), Reply(text="pong again"), Fault(status=401),
               Reply(text="pong in home"))
    child = spawn("ping", first=None)
    checks = Checks(child)
    checks.see("m15 start-up order", "read Claude Code settings")
    checks.see("m15 start-up order", "gpt-5.4 · openai")
    checks.see("m15 start-up order", "› ping")
    checks.see("m15 start-up order", "pong")
    wait_prompt(child)
    child.send("/skill broken\r")
    checks.see("m16 broken skill", "No skill named")  # nothing there yet
    wait_prompt(child)
    leave(child)
    broken = project / ".aimon" / "skills" / "broken"
    broken.mkdir(parents=True)
    (broken / "SKILL.md").write_text("---\nname: broken\n---\nx\n")  # no description
    printed = spawn("-p", "/skill broken", first=None)
    checks.child = printed
    checks.see("m16 broken skill", "Skill 'broken' did not load")
    printed.expect(pexpect.EOF)
    for args, item in ((("-p", "/status"), "m12 print /status"),
                       (("-p", "ping again"), "p11 print-mode notice")):
        run = spawn(*args, first=None)
        run.expect(pexpect.EOF)
        out = screen_text(run)
        if item.startswith("m12"):
            checks.check(item, "Now" not in out and "a turn is running" not in out, out)
        else:
            checks.check(item, "pong again" in out and "read Claude Code settings" not in out,
                         out)
    wrong = spawn("-p", "hello", first=None)
    checks.child = wrong
    checks.see("m16 401 hint", "check OPENAI_API_KEY")
    wrong.expect(pexpect.EOF)
    unknown = spawn("-p", "/nosuch", first=None)
    unknown.expect(pexpect.EOF)
    unknown.close()
    checks.check("p13 exit 2", unknown.exitstatus == 2, f"exit {unknown.exitstatus}")
    user_home = home / "user"
    user_home.mkdir()
    at_home = spawn("-p", "ping in home", first=None, cwd=user_home,
                    env={"HOME": str(user_home)})
    at_home.expect(pexpect.EOF)
    checks.check("p13 no files in home", not (user_home / ".aimon").exists(),
                 "a .aimon folder was made in the home folder")
    (claude / "settings.json").write_text(json.dumps({"permissions": {"deny": [5]}}))
    fatal = spawn(first=None)
    checks.child = fatal
    checks.see("m15 fatal error", "permissions.deny[0]: expected a string")
    fatal.expect(pexpect.EOF)
    rows = [row for row in final_screen(fatal) if row.strip()]
    error = next((i for i, row in enumerate(rows) if "expected a string" in row), 0)
    checks.check("m15 fatal error", error > 0 and not rows[error - 1].startswith("›"),
                 f"the error came after a prompt: {rows}")
    checks.done()


def test_mcp_servers_are_said_when_they_fail_and_added_locally_without_trust(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    fake = str(Path(__file__).parents[1] / "mcp" / "fake_server.py")
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "broken": {"command": "/nonexistent/server"}}}))
    add = pexpect.spawn(AIMON, ["mcp", "add", "echo", "--", sys.executable, fake],
                        cwd=str(project), encoding="utf-8")
    add.expect(pexpect.EOF)
    checks = Checks(add)
    again = pexpect.spawn(AIMON, ["mcp", "add", "echo", "--", "other"], cwd=str(project),
                          encoding="utf-8", dimensions=(40, 200))
    checks.child = again
    checks.see("m10 add refuses to replace", "is in the local scope already")
    again.expect(pexpect.EOF)
    again.close()
    checks.check("m10 add refuses to replace", again.exitstatus == 1, "it replaced")
    usage = pexpect.spawn(AIMON, ["mcp", "add", "--help"], cwd=str(project), encoding="utf-8")
    checks.child = usage
    checks.see("p9 usage", "Usage: aimon mcp add [OPTIONS] NAME (-- COMMAND [ARGS]... | URL)",
               exact=True)
    usage.expect(pexpect.EOF)
    child = spawn(first="Trust this folder?")  # .mcp.json's server waits for trust
    checks.child = child
    checks.see("trust", "] ↑/↓ Enter", exact=True)
    child.send("y")
    checks.see("m10 failed server said", "MCP server broken failed")
    wait_prompt(child)
    child.send("/mcp\r")
    checks.see("p9 columns", "MCP servers:")
    child.expect_exact("/mcp reconnect NAME connects again.")
    rows = [line for line in screen_text(child).splitlines() if "stdio" in line]
    checks.check("p9 columns", len(rows) == 2 and len({r.index("stdio") for r in rows}) == 1,
                 f"the columns line up: {rows}")
    checks.check("local server without trust", any(  # (it may still be starting, loaded)
        "echo" in r and ("connected" in r or "starting" in r) for r in rows), f"{rows}")
    wait_prompt(child)
    leave(child)
    checks.done()


def test_trusted_rules_survive_removing_hooks(spawn: Spawn, server: LoopbackModelServer,
                                             project: Path) -> None:
    settings = project / ".aimon" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "true"}]}]}}))
    local = project / ".aimon" / "settings.local.json"
    local.write_text(json.dumps({"permissions": {"allow": ["Edit(calc.py)"]}}))
    calc = str(project / "calc.py")
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Read", input={"file_path": calc}),
                                 ScriptedToolCall(name="Edit", input={
                                     "file_path": calc, "old_string": "a + b",
                                     "new_string": "a - b"}))),
               Reply(text="Edited without asking."))
    child = spawn(first="Trust this folder?")
    checks = Checks(child)
    checks.see("trust", "] ↑/↓ Enter", exact=True)
    child.send("y")
    wait_prompt(child)
    child.send("/status\r")  # the runtime is built, so settings are watched
    checks.see("m11", "Totals")
    wait_prompt(child)
    settings.unlink()
    checks.see("m11", "settings reloaded")
    child.send("edit calc\r")
    checks.see("m11", "Edited without asking.")
    wait_prompt(child)
    shown = screen_text(child)
    shown = shown[shown.rfind("settings reloaded"):]
    checks.check("m11", "held back" not in shown and "needs your approval" not in shown,
                 "removing the hooks took trust from the allow rule")
    leave(child)
    checks.done()


def test_approval_wording_keys_and_commands(spawn: Spawn, server: LoopbackModelServer,
                                           project: Path) -> None:
    long_line = "x" * 300
    server.add(
        Reply(tool_calls=(ScriptedToolCall(name="Write", input={
            "file_path": str(project / "AIMON.md"), "content": "# Notes\n"}),)),
        Reply(text="Wrote the notes."),
        bash("for i in 1 2; do echo $i; done", "Count to two"),
        Reply(text="Counted."),
        bash(f"echo {long_line}; seq 1 10", "Print a lot"),
        Reply(text="Printed."),
        Reply(tool_calls=(ScriptedToolCall(name="Skill", input={"skill": "review",
                                                                 "args": "3.0"}),)),
        Reply(text="Not reviewed."))
    child = spawn(dimensions=(40, 60))
    checks = Checks(child)
    editor_live(child)
    child.send("write notes\r")
    checks.see("p5 reason on its own line", "Why: no rule allows Write")
    checks.see("p5 rule in words", "edits to AIMON.md")
    checks.see("m2 one key", "] ↑/↓ Enter")
    child.send("n")  # deny... then change of mind: Esc goes back to the question
    checks.see("m2 change of mind", "Why?")
    child.send("\x1b")
    checks.see("m2 change of mind", "] ↑/↓ Enter")
    child.send("2")  # one key: allowed for the session, no Enter
    checks.see("m2 one key", "✓ allowed for this session: edits to AIMON.md")
    checks.see("p4 plurals", "Created AIMON.md (1 line)")
    checks.see("p4 plurals", "Wrote the notes.")
    wait_prompt(child)
    child.send("count\r")
    checks.see("p12 description", "Count to two")
    checks.see("m2 one key", "] ↑/↓ Enter")
    child.send("y")
    checks.see("p5 rule in words", "✓ allowed for this session: `for i in 1 2; do echo $i;")
    checks.see("p5 rule in words", "Counted.")
    wait_prompt(child)
    child.send("print\r")
    checks.see("m2 one key", "] ↑/↓ Enter")
    child.send("\x1b")  # answer later, with a command
    checks.see("p8 bad arguments", "1 approval waiting")
    child.send("/approve nosuchid\r")
    checks.see("p8 bad arguments", "no waiting approval has the id 'nosuchid'")
    child.send("/approve\r")
    checks.see("m5 Ctrl-O", "Printed.")
    wait_prompt(child)
    child.sendcontrol("o")
    checks.see("m5 Ctrl-O", "(whole result)")
    checks.see("m5 Ctrl-O", "x" * 100)  # the long line, cut on screen before, in full
    wait_prompt(child)
    child.send("review it\r")
    checks.see("p12 skill args", "with: 3.0")
    checks.see("m2 one key", "] ↑/↓ Enter")
    child.send("n")
    checks.see("p12 skill args", "Why?")
    child.send("\r")
    checks.see("p12 skill args", "Not reviewed.")
    wait_prompt(child)
    shown = screen_text(child)
    checks.check("p5 rule in words", "exact:" not in shown and "Edit(//" not in shown and
                 "allow Edit(AIMON.md)" not in shown, "rule jargon on screen")
    child.send("/budget iterations -3\r")
    checks.see("p8 bad arguments", "iterations must be at least 1, not '-3'")
    wait_prompt(child)
    child.send("/commands\r")
    checks.see("p1 wrapping", "/trust")
    checks.see("p2 commands grouped", "Skills")
    wait_prompt(child)
    rows = final_screen(child)
    trust = next((i for i, row in enumerate(rows) if row.startswith("  /trust")), -1)
    below = rows[trust + 1:trust + 3] if trust >= 0 else []
    checks.check("p1 wrapping", len(below) == 2 and all(row.startswith("  ") and row.strip()
                                                        for row in below),
                 f"a long row went on at the margin: {rows[trust:trust + 3]}")
    checks.check("p2 commands grouped", "Custom commands" not in screen_text(child),
                 "built-in skills were called custom commands")
    checks.check("p2 commands grouped", "Your commands" not in screen_text(child),
                 "aimon's own /bg was listed as a command of the user's")
    child.send("/help\r")
    checks.see("p2 help", "… and 3 skills")
    wait_prompt(child)
    child.send("/clear\r")
    checks.see("p6 clear", "Started a new session")
    wait_prompt(child)
    checks.check("p6 clear", "\x1b[2J" in child.logfile_read.getvalue(),
                 "the screen was not cleared")
    leave(child)
    checks.done()


def test_a_narrow_banner_wraps_between_words(spawn: Spawn, project: Path) -> None:
    from aimon_core import __version__

    width = len(f"aimon {__version__} · {project.resolve()} · /help for c")  # "ommands" over
    child = spawn(dimensions=(20, width))
    editor_live(child)
    rows = [row.rstrip() for row in final_screen(child)]
    assert "/help for commands" in rows, rows
    assert f"aimon {__version__} · {project.resolve()}" in rows, rows
    leave(child)


def test_rewind_lists_prompts_once_and_cancels_quietly(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    server.add(write(project / "step.txt", "one\n"), Reply(text="Wrote one."))
    child = spawn("--permission-mode", "acceptEdits")
    checks = Checks(child)
    editor_live(child)
    child.send("first prompt\r")
    checks.see("setup", "Wrote one.")
    wait_prompt(child)
    child.send("/rewind\r")
    checks.see("p14 rewind listed once", "Rewind to which prompt?")
    checks.see("p14 rewind listed once", "] ↑/↓ Enter")
    rows = final_screen(child)  # as the picker shows
    asked = rows[max(i for i, row in enumerate(rows) if "› /rewind" in row):]
    checks.check("p14 rewind listed once", sum("first prompt" in row for row in asked) == 1,
                 f"the prompts were listed twice: {asked}")
    child.sendcontrol("c")
    wait_prompt(child)
    shown = screen_text(child)
    checks.check("m14 rewind cancel", "Usage:" not in shown[shown.rfind("/rewind"):],
                 "a cancelled picker said Usage")
    leave(child)
    checks.done()


def test_a_subagents_own_model_goes_as_written_to_an_openai_compatible_server(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    agents = project / ".aimon" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text("---\nname: helper\ndescription: Helps.\n"
                                      "model: deepseek-chat\n---\nYou help.\n")
    server.add(Reply(text="Helped."))
    child = spawn(model=("--base-url", server.openai_base_url, "--model", "qwen3-coder"))
    checks = Checks(child)
    editor_live(child)
    child.send("/task helper say hi\r")
    checks.see("subagent model", "Helped.")
    wait_prompt(child)
    sent = server.requests[-1].body.get("model")
    checks.check("subagent model", sent == "deepseek-chat", f"the fork asked for {sent!r}")
    leave(child)
    checks.done()


def test_model_aliases_and_suggestions(spawn: Spawn, server: LoopbackModelServer) -> None:
    child = spawn(model=("--provider", "anthropic", "--model", "claude-sonnet-4-5"),
                  env={"ANTHROPIC_API_KEY": "test-key",
                       "ANTHROPIC_BASE_URL": server.anthropic_base_url})
    checks = Checks(child)
    editor_live(child)
    child.send("/model opus\r")
    checks.see("m3 aliases", "Model: claude-opus-5-5 (was claude-sonnet-4-5)")
    wait_prompt(child)
    child.send("/model sonet\r")
    checks.see("m3 suggestions", "Did you mean sonnet")
    wait_prompt(child)
    leave(child)
    checks.done()
