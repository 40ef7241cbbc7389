"""Benchmark the session tier: resume, append, listing, and the time to the first REPL prompt.

Run:  .venv/bin/python bench/bench_sessions.py [--runs N]
Prints a Markdown table. Not a test: numbers depend on the machine; see docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aimon_core.llm import Message, TextBlock, ToolResultBlock, ToolUseBlock
from aimon_core.session import (
    FileSessionLeaseStore,
    FileSessionRecordStore,
    SessionRecord,
    SessionStore,
    new_session_id,
)

AIMON = str(Path(sys.executable).with_name("aimon"))


def conversation(n: int) -> list[Message]:
    """Return n messages shaped like a real transcript: prompts, tool calls, results, answers."""
    out: list[Message] = []
    for i in range(n):
        match i % 4:
            case 0:
                out.append(Message.user(f"prompt {i}: please look at module_{i}.py " * 3))
            case 1:
                out.append(Message(role="assistant", content=(
                    TextBlock(text="Let me read it."),
                    ToolUseBlock(id=f"t{i}", name="Read", input={"file_path": f"/p/m{i}.py"}))))
            case 2:
                out.append(Message(role="user", content=(ToolResultBlock(
                    tool_use_id=f"t{i - 1}", content=(TextBlock(text="x = 1\n" * 40),)),)))
            case _:
                out.append(Message(role="assistant", content=(TextBlock(text="Done. " * 30),)))
    return out


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def make_session(records: FileSessionRecordStore, root: str, messages: list[Message]) -> str:
    record = SessionRecord.new(project_root=root, agent_ref="agent:default",
                               session_id=new_session_id())
    records.create(record)
    for start in range(0, len(messages), 500):
        records.append(record.id, messages[start:start + 500])
    return record.id


def bench_resume(base: Path, runs: int) -> list[float]:
    store = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
    session_id = make_session(store.records, "/bench/resume", conversation(10_000))  # type: ignore[arg-type]

    def resume() -> None:
        claimed = store.claim(session_id, project_root="/bench/resume", agent_ref="agent:default")
        assert len(claimed.record.transcript.messages) == 10_000
        store.release(claimed)

    return timed(resume, runs)


def bench_append(base: Path, size: int, runs: int, *, sync: bool) -> list[float]:
    records = FileSessionRecordStore(base)
    session_id = make_session(records, f"/bench/append{size}", conversation(size))
    one = [Message.user("one more message")]
    return timed(lambda: records.append(session_id, one, sync=sync), runs)  # type: ignore[arg-type]


def bench_list(base: Path, runs: int) -> tuple[list[float], float]:
    records = FileSessionRecordStore(base)
    sample = conversation(8)
    for _ in range(1_000):
        make_session(records, "/bench/list", sample)
    index = base / "index.json"
    index.unlink(missing_ok=True)
    started = time.perf_counter()
    assert len(records.list_sessions("/bench/list", limit=50)) == 50
    cold = time.perf_counter() - started
    return timed(lambda: records.list_sessions("/bench/list", limit=50), runs), cold


BARE_PROMPT = "from prompt_toolkit import PromptSession; PromptSession(message='› ').prompt()"


def bench_first_prompt(runs: int) -> tuple[list[float], list[float], list[float]]:
    """Return the times to the prompt glyph and to a key typed at it appearing on screen,
    and the latter for a bare prompt-toolkit prompt (the floor for a prompt-toolkit REPL).

    The key is sent as soon as the glyph shows; it appears once the line editor
    (prompt-toolkit) runs, which reads the keys typed before it was ready.
    """
    import compileall

    import pexpect

    import aimon_cli
    import aimon_core

    # Byte-compile aimon as `pip install` does (and Python on a first run, unless
    # PYTHONDONTWRITEBYTECODE is set, as it is on some CI machines): otherwise every run
    # would measure compiling aimon's sources rather than starting it.
    for package in (aimon_cli, aimon_core):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)
    glyph, echoed, bare = [], [], []
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as cwd:
        env = {**os.environ, "AIMON_HOME": home, "ANTHROPIC_API_KEY": "bench",
               "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "PROMPT_TOOLKIT_NO_CPR": "1",
               "TERM": "xterm"}
        for _ in range(runs):
            for command, args, times in ((AIMON, [], echoed),
                                         (sys.executable, ["-c", BARE_PROMPT], bare)):
                started = time.perf_counter()
                child = pexpect.spawn(command, args, cwd=cwd, env=env, dimensions=(40, 120),
                                      encoding="utf-8", timeout=30)
                child.expect_exact("›")
                if times is echoed:
                    glyph.append(time.perf_counter() - started)
                child.send("zq")
                child.expect_exact("zq")
                times.append(time.perf_counter() - started)
                child.sendcontrol("u")
                child.sendcontrol("d")
                child.expect(pexpect.EOF)
                child.close()
    return glyph, echoed, bare


def ms(times: list[float]) -> str:
    median, low = statistics.median(times), min(times)
    if median < 0.01:
        return f"{median * 1e6:.0f} µs (min {low * 1e6:.0f})"
    return f"{median * 1000:.1f} ms (min {low * 1000:.1f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        rows.append(("resume a 10,000-message session (claim: lease + load)",
                     ms(bench_resume(base / "r", max(3, args.runs // 2))), "< 500 ms"))
        for size in (100, 10_000):
            rows.append((f"append one message at {size:,} messages",
                         ms(bench_append(base / f"a{size}", size, args.runs * 10, sync=False)),
                         "flat"))
            rows.append((f"append one message at {size:,} messages + fsync",
                         ms(bench_append(base / f"s{size}", size, args.runs, sync=True)),
                         "flat"))
        warm, cold = bench_list(base / "l", args.runs)
        rows.append(("list 1,000 sessions (newest 50, index warm)", ms(warm), "< 200 ms"))
        rows.append(("list 1,000 sessions (index rebuilt)", f"{cold * 1000:.1f} ms", ""))
    glyph, echoed, bare = bench_first_prompt(args.runs)
    rows.append(("`aimon` to the first REPL prompt on screen", ms(glyph), "< 300 ms"))
    rows.append(("`aimon` to a key typed at that prompt showing (line editor live)", ms(echoed),
                 ""))
    rows.append(("a bare prompt-toolkit prompt to a typed key showing (the floor)", ms(bare),
                 ""))
    print("| what | time | target |")
    print("|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
