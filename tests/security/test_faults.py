"""Class 6: crash and fault edges that can be driven end to end (RELIABILITY.md 7, 8, 9).

Writes to a folder path are refused; FIFOs in the project or in place of a session file never
hang aimon; the data folder and its files are private after a run; failing hooks are reported
on stderr in print mode; tool calls from broken or truncated model responses never run.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from aimon_core.testing import (
    CutStream,
    LoopbackModelServer,
    Reply,
    ScriptedToolCall,
    Step,
    StreamError,
)

from ._attempts import (
    Absent,
    Attempt,
    Batch,
    Outcome,
    Ran,
    Refused,
    Workspace,
    bash,
    call_id,
    read,
    tool,
    write,
)
from .conftest import (
    AIMON,
    base_env,
    cases,
    check_attempt,
    model_args,
    release_fifos,
)

# The first test waits for every batch of the suite (see `outcomes`): about 25 s on two idle
# cores, minutes on a crowded machine.
pytestmark = pytest.mark.timeout(600)

PROMPT_MS = 5_000
"""What "returns promptly" means for a call on a FIFO or a timed-out command."""
DEADLINE = 60.0
"""Seconds before a run that hangs on a FIFO is killed (what finished shows in stream-json).
Generous: on a loaded two-core machine aimon alone can take ten seconds to start."""

HOOK_FILES = {
    "@X@/hook_exit_one.sh": "touch @MARK@/hook_exit_one.ran\necho hook-exit-one-said-this >&2\n"
                            "exit 1\n",
    "@X@/hook_bad_json.sh": "touch @MARK@/hook_bad_json.ran\n"
                            "echo '{\"decision\": \"block\", '\nexit 0\n",
}
HOOKS = {"hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "sh @X@/hook_exit_one.sh"}]}],
    "PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "sh @X@/hook_bad_json.sh"}]}],
}}

# Calls on the FIFO come last, in a reply of their own: a hang there cannot hold back the
# others, and a killed run still shows what did finish in its stream-json output.
ATTEMPTS = (
    Attempt(id="write_trailing_slash", call=write("@P@/newdir/", "x\n"),
            checks=(Refused(), Absent(path="@P@/newdir"))),
    Attempt(id="write_existing_dir", call=write("@P@/src", "x\n"), checks=(Refused(),)),
    Attempt(id="bash_timeout", call=bash("sleep 30", timeout_ms=1_000), checks=(Refused(),)),
    Attempt(id="ctl_write_file", call=write("@P@/src/ok.txt", "ok\n"), checks=(Ran(),)),
    Attempt(id="ctl_bash_with_failing_hooks", call=bash("echo hi"), checks=(Ran(contains="hi"),),
            files=HOOK_FILES),
    Attempt(id="write_fifo", call=write("@P@/pipe", "x\n"), checks=(Refused(),), late=True),
    Attempt(id="read_fifo", call=read("@P@/pipe"), checks=(Refused(),), late=True),
    Attempt(id="grep_dir_with_fifo", call=tool("Grep", pattern="zzz", path="."), checks=(),
            late=True),
    Attempt(id="grep_fifo", call=tool("Grep", pattern="zzz", path="pipe",
                                      output_mode="content"), checks=(), late=True),
    Attempt(id="glob_with_fifo", call=tool("Glob", pattern="*"), checks=(Ran(),), late=True),
)
PROMPT = ("bash_timeout", "write_fifo", "read_fifo", "grep_dir_with_fifo", "grep_fifo",
          "glob_with_fifo")


def build_fifo(ws: Workspace) -> None:
    """Put a FIFO (with no writer, so a read blocks) and a folder in the project."""
    os.mkfifo(ws.project / "pipe")
    (ws.project / "src").mkdir()


def touch_call(ws: Workspace, name: str) -> ScriptedToolCall:
    return ScriptedToolCall(name="Bash", input={"command": f"touch {ws.mark / name}"})


def broken_streams(ws: Workspace) -> list[Step]:
    """A dropped stream, then a mid-stream error, each after a complete tool call; then text."""
    cut = Reply(tool_calls=(touch_call(ws, "cut_stream"),))
    errored = Reply(tool_calls=(touch_call(ws, "stream_error"),))
    return [CutStream(reply=cut, after_events=1_000),
            StreamError(reply=errored, after_events=1_000), Reply(text="done")]


def cut_graceful(ws: Workspace) -> list[Step]:
    """A complete tool call, the HTTP body ended properly, only message_stop missing."""
    reply = Reply(tool_calls=(touch_call(ws, "cut_graceful"),))
    return [CutStream(reply=reply, after_events=1_000, graceful=True), Reply(text="done")]


def bad_json(ws: Workspace) -> list[Step]:
    """Tool arguments that are not valid JSON (cut off after the command)."""
    call = ScriptedToolCall(name="Bash", input={},
                            raw_arguments=f'{{"command": "touch {ws.mark / "bad_json"}"')
    return [Reply(tool_calls=(call,)), Reply(text="done"), Reply(text="done")]


def max_tokens(ws: Workspace) -> list[Step]:
    """A tool call in a response that stopped at max_tokens (truncated)."""
    reply = Reply(tool_calls=(touch_call(ws, "max_tokens"),), stop="max_tokens")
    return [reply, Reply(text="done"), Reply(text="done")]


MODEL_FAULTS = {
    "model_broken_streams": (broken_streams, ("cut_stream", "stream_error")),
    "model_cut_graceful": (cut_graceful, ("cut_graceful",)),
    "model_bad_json": (bad_json, ("bad_json",)),
    "model_max_tokens": (max_tokens, ("max_tokens",)),
}
MODEL_CASES = [(name, marker) for name, (_, markers) in MODEL_FAULTS.items()
               for marker in markers]

TOOLS = Batch(name="faults_tools", attempts=ATTEMPTS, build=build_fifo, settings=HOOKS,
              args=("--allowed-tools", "Write,Bash"), timeout=DEADLINE)
# Broken responses stay on the Anthropic wire: what a broken stream looks like depends on the
# SDK (see aimon_core.testing._loopback), and these runs are about exactly that.
FAULTS = tuple(Batch(name=name, attempts=(), steps=steps, args=("--allowed-tools", "Bash"),
                     provider="anthropic")
               for name, (steps, _) in MODEL_FAULTS.items())
BATCHES = (TOOLS, *FAULTS)


@pytest.mark.parametrize(("batch", "attempt"), cases((TOOLS,)))
def test_attempt(batch: Batch, attempt: Attempt, outcomes: dict[str, Outcome]) -> None:
    check_attempt(batch, outcomes, attempt)


@pytest.mark.parametrize("id", PROMPT)
def test_fifo_and_timeout_calls_return_promptly(id: str, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[TOOLS.name]
    index = [a.id for a in ATTEMPTS].index(id)
    result = outcome.results.get(call_id(index))
    assert result is not None, f"{id} never returned; {outcome.summary()}"
    assert result.duration_ms is not None and result.duration_ms < PROMPT_MS, (
        f"{id} took {result.duration_ms} ms")


def test_data_folder_is_private_after_a_run(outcomes: dict[str, Outcome]) -> None:
    modes = outcomes[TOOLS.name].modes
    assert any(name.endswith(".jsonl") for name in modes), modes
    loose = []
    for name, mode in sorted(modes.items()):
        wanted = 0o700 if name.endswith("/") else 0o600
        if mode != wanted:
            loose.append(f"{name}: {mode:o}, want {wanted:o}")
    assert not loose, "\n".join(loose)


@pytest.mark.parametrize(("name", "marker"), MODEL_CASES)
def test_no_tool_call_runs_from_a_broken_response(name: str, marker: str,
                                                  outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[name]
    assert outcome.returncode is not None, outcome.summary()
    assert not (outcome.workspace.mark / marker).exists(), (
        f"the tool call of a broken response ran; {outcome.summary()}")


def test_both_broken_streams_were_played(outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes["model_broken_streams"]
    assert outcome.remaining == 0, f"aimon gave up before the stream error; {outcome.summary()}"


def test_a_hook_that_exits_1_is_reported_on_stderr(outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[TOOLS.name]
    assert (outcome.workspace.mark / "hook_exit_one.ran").exists(), "the hook never ran"
    err = outcome.stderr
    assert "hook_exit_one" in err or "hook-exit-one-said-this" in err, f"stderr: {err!r}"


def test_a_hook_that_prints_invalid_json_is_reported_on_stderr(
    outcomes: dict[str, Outcome]
) -> None:
    from aimon_core.hook._command import hook_label

    outcome = outcomes[TOOLS.name]
    assert (outcome.workspace.mark / "hook_bad_json.ran").exists(), "the hook never ran"
    err = outcome.stderr
    # Named by its command, shortened when long: the temporary folder's length decides
    # whether the file name itself survives the cut.
    named = hook_label(f"sh {outcome.workspace.outside}/hook_bad_json.sh")
    assert f"hook {named!r} printed invalid JSON" in err, f"stderr: {err!r}"


def fifo_session(outcome: Outcome) -> str:
    """Replace the run's session file with a FIFO; return the session id."""
    files = sorted((outcome.workspace.home / "data" / "projects").glob("*/*.jsonl"))
    assert len(files) == 1, files
    files[0].unlink()
    os.mkfifo(files[0], 0o600)
    return str(files[0].stem)


def test_a_fifo_session_file_never_hangs_aimon(outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[FAULTS[0].name]
    ws = outcome.workspace
    session_id = fifo_session(outcome)
    with LoopbackModelServer([Reply(text="resumed")], provider="openai") as server:
        env = base_env(ws, server, "openai")
        listing = run(["sessions", "list"], ws, env)
        resumed = run([*model_args("openai"), "-p", "go", "--resume", session_id], ws, env)
    assert "Traceback" not in listing.stderr, listing
    assert "Traceback" not in resumed.stderr, resumed
    assert resumed.returncode != 0 and session_id in resumed.stderr, resumed


def run(args: list[str], ws: Workspace, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run aimon; a hang fails the test after 10 s instead of blocking the suite."""
    try:
        return subprocess.run([str(AIMON), *args], cwd=ws.project, env=env, text=True,
                              capture_output=True, timeout=10, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"aimon {' '.join(args)} hung on a FIFO session file")
    finally:
        release_fifos(ws.root)
