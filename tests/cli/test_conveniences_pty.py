"""What a daily user reaches for, in a real pseudo-terminal against the loopback model:
@file mentions and their completion, !commands, Shift-Tab and the plan step, images and
PDFs, pickers and argument completion, Ctrl-G, Ctrl-R, /export, /copy, live command
output and one-key approvals (issue 26).

Each story runs in one `aimon` process; each check names what it shows. Every wait is on
screen text, never a fixed sleep.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall, StallStream

from .conftest import Checks, Spawn, editor_live, leave, screen_text, wait_prompt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                       "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
SHIFT_TAB = "\x1b[Z"
PASTE = "\x1b[200~{}\x1b[201~"


def request_text(server: LoopbackModelServer, index: int = -1) -> str:
    return json.dumps(server.requests[index].body)


def test_mentions_and_shell_commands(spawn: Spawn, server: LoopbackModelServer,
                                     project: Path) -> None:
    (project / ".gitignore").write_text("ignored/\n")
    (project / "ignored").mkdir()
    (project / "ignored" / "secret_notes.txt").write_text("hidden\n")
    (project / "docs").mkdir()
    (project / "docs" / "guide.md").write_text("# Guide\n")
    (project / ".env").write_text("TOKEN=abcdef\n")
    server.add(Reply(text="Seen the file."), Reply(text="Seen the output."))
    child = spawn("--disallowed-tools", "Read(./.env),Bash(rm:*)")
    checks = Checks(child)
    editor_live(child)
    child.send("explain @calc")
    checks.see("@ completion", "calc.py")  # the menu offers the file as it is typed
    child.send("\t")
    child.send("#L2-2 and @gui")
    checks.see("@ completion (fuzzy)", "docs/guide.md")
    child.send("\x17")  # Ctrl-W: "@gui" goes
    child.send("@docs/ and @.env\r")
    checks.see("@path", "⎿ Attached calc.py#L2-2 (lines 2-2 of 2)")
    checks.see("@folder", "⎿ Attached the listing of docs/")
    checks.see("@ deny rule", "⎿ @.env was not attached: a permission rule denies reading it")
    checks.see("@path answer", "Seen the file.")
    wait_prompt(child)
    sent = request_text(server)
    checks.check("@path", "2\\treturn a + b" in sent.replace("    ", ""), "the lines were sent")
    checks.check("@folder", "guide.md" in sent, "the listing was sent")
    checks.check("@ deny rule", "TOKEN=abcdef" not in sent, "the denied file stayed out")
    checks.check("@ deny rule", "was not attached: a permission rule denies" in sent,
                 "the prompt says the file was not attached")
    child.send("!echo shell-out-$((6*7))\r")
    checks.see("!command", "● Bash(echo shell-out-$((6*7)))")
    checks.see("!command output", "shell-out-42")
    wait_prompt(child)
    checks.check("!command", "⚠ !echo" not in screen_text(child), "a warning followed it")
    child.send("!rm calc.py\r")
    checks.see("!command deny rule", "✗ Bash(rm calc.py)")
    checks.see("!command deny rule", "Denied: denied by rule Bash(rm:*)")
    wait_prompt(child)
    checks.check("!command deny rule", "was not run" not in screen_text(child),
                 "the refusal was said twice")
    child.send("!echo waiting-$((1+1)); sleep 30\r")
    checks.see("!command interrupted", "waiting-2", live=True)  # (not the command as typed)
    child.sendcontrol("c")
    checks.see("!command interrupted", "⎿ Interrupted.")
    checks.see("!command interrupted", "⏹ Interrupted")
    wait_prompt(child)
    child.send("what did it print?\r")
    checks.see("!command", "Seen the output.")
    wait_prompt(child)
    sent = request_text(server)
    checks.check("!command", "<bash-input>echo shell-out-$((6*7))</bash-input>" in
                 json.loads(sent)["messages"][-1]["content"], "the output joined the prompt")
    checks.check("!command deny rule", (project / "calc.py").exists(), "calc.py survived")
    checks.check("@ .gitignore", "secret_notes" not in str(child.before),
                 "an ignored file was offered")
    leave(child)
    checks.done()


def test_shift_tab_cycles_the_mode_and_a_plan_is_approved_to_start(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    target = str(project / "plan.txt")
    server.add(Reply(text="The plan: write plan.txt."),
               Reply(tool_calls=(ScriptedToolCall(name="Write", input={
                   "file_path": target, "content": "done\n"}),)),
               Reply(text="Carried out."))
    child = spawn()
    checks = Checks(child)
    editor_live(child)
    child.send(SHIFT_TAB)
    checks.see("Shift-Tab", "⏵⏵ accept edits ›")
    child.send(SHIFT_TAB)
    checks.see("Shift-Tab", "⏸ plan mod")  # the screen may keep its "e"
    child.send("plan the change\r")
    checks.see("plan step", "The plan: write plan.txt.")
    checks.see("plan step", "Start on this plan?")
    checks.see("plan step", "] ↑/↓ Enter", exact=True)
    child.send("a")
    checks.see("plan step", "Permission mode: acceptEdits. Starting on the plan.")
    checks.see("plan step", "Carried out.")
    wait_prompt(child)
    checks.check("plan step", (project / "plan.txt").exists(), "the plan's edit ran unasked")
    checks.check("plan step", "The plan is approved" in request_text(server, 1),
                 "the model was told to go ahead")
    child.send(SHIFT_TAB)
    checks.see("Shift-Tab", "⏸ plan mod")  # the screen may keep its "e"
    child.send(SHIFT_TAB)
    child.send("/permissions\r")
    checks.see("Shift-Tab", "Mode: default")
    wait_prompt(child)
    leave(child)
    checks.done()


def test_images_and_pdfs_at_the_prompt(spawn: Spawn, server: LoopbackModelServer,
                                       project: Path, tmp_path: Path) -> None:
    shot = tmp_path / "screen shot.png"
    shot.write_bytes(PNG)
    spec = tmp_path / "spec.pdf"
    spec.write_bytes(b"%PDF-1.4\n%%EOF\n")
    tools = tmp_path / "bin"
    tools.mkdir()
    xclip = tools / "xclip"
    xclip.write_text(f"#!/bin/sh\nexec cat '{shot}'\n")
    xclip.chmod(xclip.stat().st_mode | stat.S_IXUSR)
    server.add(Reply(text="A one-pixel image and a spec."))
    env = {"DISPLAY": ":0", "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"}
    child = spawn(env=env)
    checks = Checks(child)
    editor_live(child)
    child.send("look at ")
    child.send(PASTE.format(f"'{shot}'"))  # a dropped file arrives as its quoted path
    checks.see("pasted image", "[Image #1]")
    child.send(" and ")
    child.send(PASTE.format(f"file://{spec}"))
    checks.see("pasted PDF", "[PDF #2 spec.pdf]")
    child.send(" and ")
    child.sendcontrol("v")  # the clipboard's image
    checks.see("clipboard image", "[Image #3]")
    child.send("\r")
    checks.see("images", "A one-pixel image and a spec.")
    wait_prompt(child)
    sent = server.requests[-1].body["messages"][-1]["content"]
    kinds = [part.get("type") for part in sent] if isinstance(sent, list) else []
    checks.check("images", kinds.count("image_url") == 2 and kinds.count("file") == 1,
                 f"two images and a document were sent: {kinds}")
    leave(child)
    plain = spawn(model=("--provider", "openai", "--model", "o3-mini"),
                  env={"PATH": os.environ["PATH"], "DISPLAY": ""})
    checks.child = plain
    editor_live(plain)
    plain.sendcontrol("v")
    checks.see("no clipboard", "No image attached: no clipboard to read an image from here")
    wait_prompt(plain)
    plain.send(PASTE.format(str(shot).replace(" ", "\\ ")))  # dropped: escaped
    plain.send("\r")
    checks.see("model without images", "Not sent: o3-mini does not take images")
    checks.see("model without images", "[Image #1]")  # the draft comes back to fix
    plain.sendcontrol("u")
    leave(plain)
    checks.done()


def test_pickers_and_argument_completion(spawn: Spawn, server: LoopbackModelServer,
                                         project: Path) -> None:
    server.add(Reply(text="First session."))
    first = spawn()
    first.send("an earlier session\r")
    first.expect_exact("First session.")
    leave(first)
    server.add(Reply(text="On the mini."))
    child = spawn()
    checks = Checks(child)
    child.expect_exact("gpt-5.4 · openai")  # the session is open: its models can be offered
    editor_live(child)
    child.send("/model gpt-5.4-m")
    checks.see("/model completion", "gpt-5.4-mini")
    child.sendcontrol("u")
    child.send("/model\r")
    checks.see("/model picker", "Switch to which model?")
    checks.see("/model picker", "[1-9 · Esc cancels] ↑/↓ Enter", exact=True)
    child.send("\x1b[B\r")  # down once, then Enter: the second model
    checks.see("/model picker", "Model: gpt-5.4-mini (was gpt-5.4)")
    wait_prompt(child)
    child.send("/mode\r")
    checks.see("/mode picker", "Switch to which permission mode?")
    checks.see("/mode picker", "· Esc cancels] ↑/↓ Enter", exact=True)
    child.send("3")
    checks.see("/mode picker", "Permission mode: plan")
    wait_prompt(child)
    child.send("/mode default\r")
    wait_prompt(child)
    child.send("/resume\r")
    checks.see("/resume picker", "Resume which session?")
    checks.see("/resume picker", "an earlier session")
    checks.see("/resume picker", "· Esc cancels] ↑/↓ Enter", exact=True)
    child.send("1")
    checks.see("/resume picker", "› an earlier session")
    checks.see("/resume picker", "First session.")
    wait_prompt(child)
    shown = screen_text(child)
    checks.check("p3 said once", shown[shown.rfind("/resume"):].count("Resumed session") == 1,
                 "the resume was announced twice")
    child.send("/skill\r")
    checks.see("/skill picker", "Run which skill?")
    checks.see("/skill picker", "· Esc cancels] ↑/↓ Enter", exact=True)
    child.send("1")
    checks.see("/skill picker", "› /commit")  # left in the box, for its arguments
    child.sendcontrol("u")
    child.send("/task\r")
    checks.see("/task picker", "Run which subagent?")
    checks.see("/task picker", "· Esc cancels] ↑/↓ Enter", exact=True)
    child.send("2")
    checks.see("/task picker", "› /task explore")
    child.sendcontrol("u")
    child.send("/agents gen")
    checks.see("/agents completion", "general-purpose")
    child.send("\t\r")
    checks.see("/agents NAME", "general-purpose")
    checks.see("/agents NAME", "1 subagent loaded:")
    wait_prompt(child)
    leave(child)
    checks.done()


def test_editor_history_search_export_copy_and_help(spawn: Spawn, server: LoopbackModelServer,
                                                    project: Path, tmp_path: Path,
                                                    home: Path) -> None:
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nprintf "written in the editor" > "$1"\n')
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    server.add(Reply(text="**Answer** one."), Reply(text="From the editor."),
               Reply(text="Again."))
    child = spawn(env={"EDITOR": str(editor), "VISUAL": str(editor), "DISPLAY": "",
                       "WAYLAND_DISPLAY": "", "PATH": "/usr/bin:/bin"})
    checks = Checks(child)
    editor_live(child)
    child.send("a memorable first prompt\r")
    checks.see("prompt", "Answer one.")
    wait_prompt(child)
    child.sendcontrol("g")
    checks.see("Ctrl-G", "written in the editor")
    child.send("\r")
    checks.see("Ctrl-G", "From the editor.")
    wait_prompt(child)
    child.sendcontrol("r")
    child.send("memorable")
    checks.see("Ctrl-R", "a memorable first prompt")
    child.send("\r")  # takes the found prompt into the box
    child.send("\r")  # sends it
    checks.see("Ctrl-R", "Again.")
    wait_prompt(child)
    child.send("/export\r")
    checks.see("/export", "Exported the conversation to")
    wait_prompt(child)
    exported = list(project.glob("aimon-*.md"))
    text = exported[0].read_text() if exported else ""
    checks.check("/export", "## You\n\na memorable first prompt" in text and
                 "**Answer** one." in text, f"the Markdown holds the conversation: {text!r}")
    child.send("/copy\r")
    checks.see("/copy", "No clipboard here")
    checks.see("/copy", "last-answer.md")
    wait_prompt(child)
    copied = home / "data" / "last-answer.md"
    checks.check("/copy", copied.exists() and copied.read_text() == "Again.",
                 "the last answer was saved where it says")
    child.send("/help\r")
    for key in ("Shift-Tab", "Ctrl-O", "Ctrl-R", "Ctrl-G", "Ctrl-Z", "@path", "!command"):
        checks.see("/help keys", key)
    wait_prompt(child)
    leave(child)
    checks.done()


def test_live_command_output_and_one_key_approvals(spawn: Spawn, server: LoopbackModelServer,
                                                   project: Path) -> None:
    ticking = "for i in 1 2 3 4 5 6 7 8 9 10; do echo tick-$i; sleep 1; done"
    server.add(
        StallStream(reply=Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
            "command": ticking, "description": "Count to ten"}),)),
            after_events=2, seconds=30, released=True),
        Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
            "command": "python3 -m pytest -q tests/test_a.py",
            "description": "Run the tests"}),)),
        Reply(text="Edited and ran."))
    child = spawn()
    checks = Checks(child)
    editor_live(child)
    child.send("count\r")
    checks.see("tool line as soon as named", "● Bash(…)")  # its input still streams
    server.release()
    checks.see("waiting for approval", "Count to ten")  # the description under the command
    checks.see("one key", "] ↑/↓ Enter", exact=True)
    child.send("\x1b")  # answer later: the prompt comes back with the spinner
    checks.see("waiting for approval", "waiting for your approval", live=True)
    child.send("/approve\r")
    checks.see("live output", "tick-2")
    checks.see("live output", "running Bash", live=True)
    child.sendcontrol("c")
    checks.see("live output kept", "Interrupted")
    checks.see("live output kept", "tick-2")
    checks.see("live output kept", "Partial output is kept")
    wait_prompt(child)
    child.send("run the tests\r")
    checks.see("broader rule", "don't ask again for `python3 -m pytest *` in this session")
    checks.see("one key", "] ↑/↓ Enter", exact=True)
    child.send("e")
    checks.see("edit command", "Run instead")
    child.sendcontrol("u")
    child.send("echo edited-command-ran\r")
    checks.see("edit command", "✓ allowed as you edited it: Bash(echo edited-command-ran)")
    checks.see("edit command", "Edited and ran.")
    wait_prompt(child)
    sent = json.dumps(server.requests[-1].tool_results())
    checks.check("edit command", "edited-command-ran" in sent and "edited this call" in sent,
                 "the model saw the edited command's output, and that it was edited")
    leave(child)
    checks.done()
