"""End to end: print mode in pipelines (`aimon -p ... | head -1`, `echo hi | aimon`).

The OpenAI wire: the provider does not matter here, and `import openai` is the cheaper SDK.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path

from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall, Step

AIMON = str(Path(sys.executable).with_name("aimon"))


def aimon_env(server: LoopbackModelServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_PROVIDER", "AIMON_MODEL"))}
    env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.openai_base_url,
               AIMON_NO_LOCAL_PROBE="1")
    return env


def aimon_args(*args: str) -> list[str]:
    return [AIMON, "--provider", "openai", "--model", "gpt-5.4", *args]


def test_stream_json_into_a_closed_pipe_stops_quietly_and_resumes_from_a_pipe(
        tmp_path: Path) -> None:
    """`aimon -p ... --output-format stream-json | head -1`, then `echo ... | aimon -r ID`."""
    marker = tmp_path / "tool-ran"
    reader_gone = threading.Event()
    replies: list[Step] = [
        Reply(text="Making the file now.", tool_calls=(ScriptedToolCall(
            name="Bash", input={"command": f"touch {marker}"}),)),
        Reply(text="Resumed fine."),
    ]

    def respond(request: RecordedRequest) -> Step:
        # The first answer comes only once the reader of aimon's stdout has gone away.
        assert reader_gone.wait(30)
        return replies.pop(0)

    with LoopbackModelServer(respond, provider="openai") as server:
        err_path = tmp_path / "stderr"
        with err_path.open("w") as err:
            proc = subprocess.Popen(
                aimon_args("-p", "make the file", "--output-format", "stream-json",
                           "--allowed-tools", "Bash(touch:*)"),
                cwd=tmp_path, env=aimon_env(server), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=err, text=True)
            assert proc.stdout is not None
            init = json.loads(proc.stdout.readline())  # what `head -1` reads
            proc.stdout.close()
            reader_gone.set()
            code = proc.wait(timeout=60)
        assert code == 141  # 128 + SIGPIPE, as `yes | head -1` ends
        assert err_path.read_text() == ""  # no traceback, no "interrupted"
        assert not marker.exists()  # no tool call runs for a reader that is gone
        assert init["type"] == "system"

        # No -p, stdin piped: print mode; -r resumes the session the closed pipe cut short.
        resumed = subprocess.run(aimon_args("-r", init["session_id"]), input="go on\n",
                                 cwd=tmp_path, env=aimon_env(server), capture_output=True,
                                 text=True, timeout=60, check=False)
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout == "Resumed fine.\n"
        messages = server.requests[-1].body["messages"]
    assert not marker.exists()
    # The record is whole: the cut turn, the new prompt. Where the cut landed depends on when
    # aimon noticed the reader had gone: mid-stream (its partial text, no call), or once the
    # model's message was complete (the call recorded, answered as never run). Either way
    # every call the record has is answered, and none ran.
    roles = [m["role"] for m in messages if m["role"] != "system"]
    assert roles[0] == "user" and roles[-1] == "user" and "assistant" in roles
    calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    answers = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == calls
    assert all("interrupted" in json.dumps(m).lower() for m in answers), answers
    assert "make the file" in json.dumps(messages) and messages[-1]["content"] == "go on"


def test_piped_stdin_without_p_runs_print_mode_and_empty_stdin_says_what_to_do(
        tmp_path: Path) -> None:
    with LoopbackModelServer(provider="openai") as server:
        server.add(Reply(text="Four."))
        done = subprocess.run(aimon_args("answer briefly"), input="2+2?\n", cwd=tmp_path,
                              env=aimon_env(server), capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Four.\n"
        sent = json.dumps(server.requests[0].body["messages"][-1])
        assert "answer briefly" in sent and "2+2?" in sent  # combined as -p combines them

        empty = subprocess.run(aimon_args(), stdin=subprocess.DEVNULL, cwd=tmp_path,
                               env=aimon_env(server), capture_output=True, text=True,
                               timeout=60, check=False)
        assert len(server.requests) == 1
    assert empty.returncode == 2
    assert empty.stdout == ""
    lines = empty.stderr.splitlines()
    assert len(lines) == 1 and 'aimon -p "..."' in lines[0] and "terminal" in lines[0]


def refusing_script(project: Path) -> list[Step]:
    return [
        Reply(tool_calls=(
            ScriptedToolCall(name="Bash", input={"command": "rm -rf build"}),
            ScriptedToolCall(name="Write", input={"file_path": "notes.txt", "content": "hi\n"}),
            ScriptedToolCall(name="Bash", input={"command": "curl http://example.invalid"}),
        )),
        Reply(text="Done what I could."),
    ]


def test_refused_calls_are_summed_up_on_stderr_with_flags_that_allow_them(
        tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    with LoopbackModelServer(provider="openai") as server:
        server.add(*refusing_script(tmp_path))
        refused = subprocess.run(
            aimon_args("-p", "clean up", "--disallowed-tools", "Bash(curl:*)"),
            cwd=tmp_path, env=aimon_env(server), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=60, check=False)
        assert refused.returncode == 0, refused.stderr
        assert refused.stdout == "Done what I could.\n"  # nothing of the summary on stdout
        assert (tmp_path / "build").is_dir() and not (tmp_path / "notes.txt").exists()
        err = refused.stderr.splitlines()
        assert err[:3] == [
            "aimon: 2 tool calls needed approval, which print mode cannot ask for; "
            "they were refused:",
            "  Bash(rm -rf build)",
            "  Write(notes.txt)",
        ]
        assert "aimon: or allow the edits with --permission-mode acceptEdits" in err
        assert err[-2:] == ["aimon: 1 tool call was denied (no flag is suggested):",
                            "  Bash(curl http://example.invalid): denied by rule Bash(curl:*)"]
        advice = next(line for line in err if "run again with --allowed-tools" in line)
        flags = shlex.split(advice.split(" run again with ", 1)[1])
        assert flags == ["--allowed-tools", "Bash(rm -rf build),Edit(notes.txt)"]

        # The flags named allow exactly those calls; the denial stays, in the json result.
        server.add(*refusing_script(tmp_path))
        allowed = subprocess.run(
            aimon_args("-p", "clean up", "--disallowed-tools", "Bash(curl:*)", *flags,
                       "--output-format", "json"),
            cwd=tmp_path, env=aimon_env(server), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=60, check=False)
        assert allowed.returncode == 0, allowed.stderr
        calls = [c for m in server.requests[-1].body["messages"] for c in m.get("tool_calls") or []]
        curl_id = calls[-1]["id"]
    assert not (tmp_path / "build").exists() and (tmp_path / "notes.txt").read_text() == "hi\n"
    assert json.loads(allowed.stdout)["permission_denials"] == [{
        "tool_name": "Bash", "tool_use_id": curl_id,
        "tool_input": {"command": "curl http://example.invalid"}}]
    assert allowed.stderr.splitlines() == [
        "aimon: 1 tool call was denied (no flag is suggested):",
        "  Bash(curl http://example.invalid): denied by rule Bash(curl:*)"]
