"""Print mode in-process: a reader of stdout that goes away, and the refusal summary.

The runtime is built as the command line builds it, with a scripted model.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest

from aimon_cli._print import OutputClosedError, PrintJob, run_print
from aimon_core.llm import LLMClient, reply, script
from aimon_core.runtime import RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore


class ClosedPipe(io.StringIO):
    """A stdout whose reader has gone: every write fails as a pipe's does."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


class ClosesAfter(io.StringIO):
    """A stdout whose reader goes away after reading `lines` lines."""

    def __init__(self, lines: int) -> None:
        super().__init__()
        self.lines = lines

    def write(self, text: str) -> int:
        if self.getvalue().count("\n") >= self.lines:
            raise BrokenPipeError(32, "Broken pipe")
        return super().write(text)


def run(tmp_path: Path, client: LLMClient, output_format: str, out: io.StringIO,
        err: io.StringIO, flags: RuntimeFlags | None = None) -> tuple[object, str]:
    """Run one print-mode turn; return the result (or the error) and the stored transcript."""
    assembly = build_runtime(tmp_path, flags=flags or RuntimeFlags(),
                             parts=RuntimeParts(client=client))
    store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())

    async def main() -> tuple[object, str]:
        live = await assembly.open_session(store)
        try:
            outcome: object = await run_print(
                PrintJob(prompt="go", output_format=output_format, max_iterations=None),
                live, out, err, policy=assembly.policy)
        except OutputClosedError as exc:
            outcome = exc
        finally:
            await live.close()
        roles = " ".join(m.role for m in live.record.transcript.messages)
        await assembly.aclose()
        return outcome, roles

    return asyncio.run(main())


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_a_closed_stdout_at_the_end_is_quiet(tmp_path: Path, output_format: str) -> None:
    err = io.StringIO()
    outcome, roles = run(tmp_path, script(reply("The answer.")), output_format, ClosedPipe(),
                         err)
    assert isinstance(outcome, OutputClosedError)
    assert err.getvalue() == ""
    assert roles == "user assistant"  # the turn itself was whole


def test_a_reader_gone_mid_turn_stops_before_the_next_tool_call(tmp_path: Path) -> None:
    marker = tmp_path / "made"
    client = script(reply("", ("Bash", {"command": f"touch {marker}"})))  # no second call
    err = io.StringIO()
    outcome, roles = run(tmp_path, client, "stream-json", ClosesAfter(lines=1), err,
                         RuntimeFlags(allowed=("Bash(touch:*)",)))
    assert isinstance(outcome, OutputClosedError)
    assert not marker.exists()
    assert err.getvalue() == ""
    assert roles == "user assistant user"  # the call is answered: interrupted, never run


def test_refusals_are_summed_up_on_stderr_and_listed_in_json(tmp_path: Path) -> None:
    client = script(
        reply("", ("Bash", {"command": "rm -rf build"}), ("Bash", {"command": "curl x.invalid"}),
              ("Write", {"file_path": "notes.txt", "content": "x"})),
        reply("Done."),
    )
    out, err = io.StringIO(), io.StringIO()
    run(tmp_path, client, "json", out, err,
        RuntimeFlags(disallowed=("Bash(curl:*)",)))
    denials = json.loads(out.getvalue())["permission_denials"]
    assert [(d["tool_name"], d["tool_input"]) for d in denials] == [
        ("Bash", {"command": "rm -rf build"}), ("Bash", {"command": "curl x.invalid"}),
        ("Write", {"file_path": "notes.txt", "content": "x"})]
    assert all(d["tool_use_id"] for d in denials)
    assert err.getvalue() == (
        "aimon: 2 tool calls needed approval, which print mode cannot ask for; "
        "they were refused:\n"
        "  Bash(rm -rf build)\n"
        "  Write(notes.txt)\n"
        "aimon: to allow them, run again with --allowed-tools "
        "'Bash(rm -rf build),Edit(notes.txt)'\n"
        "aimon: or allow the edits with --permission-mode acceptEdits\n"
        "aimon: 1 tool call was denied (no flag is suggested):\n"
        "  Bash(curl x.invalid): denied by rule Bash(curl:*)\n")


def test_an_unreachable_server_is_told_the_same_way_in_print_mode_and_the_repl(
        tmp_path: Path) -> None:
    from aimon_cli.render import stop_line
    from aimon_core.agent import ExecutionResult
    from aimon_core.llm import LLMConnectionError

    error = LLMConnectionError("connection refused", provider="anthropic",
                               url="http://127.0.0.1:9", unreachable=True)
    error.attempts = 2
    out, err = io.StringIO(), io.StringIO()
    result, _ = run(tmp_path, script(error), "text", out, err)
    said = "cannot reach the anthropic API at http://127.0.0.1:9 (connection refused; " \
           "gave up after 2 attempts)"
    assert out.getvalue() == "" and err.getvalue() == f"aimon: {said}\n"
    assert isinstance(result, ExecutionResult)
    line = stop_line(result)
    assert line is not None and line.plain == f"✗ Model error: {said}"
