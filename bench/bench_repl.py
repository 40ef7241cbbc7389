"""Benchmark the REPL as a person sees it: streamed text to screen, and idle CPU.

Run:  .venv/bin/python bench/bench_repl.py [--runs N] [--idle SECONDS]

1. First streamed token → on screen: a loopback Anthropic-style server sends the start of an
   answer (half a paragraph: no Markdown block is complete), notes the time it flushed the
   first text delta, and stalls; the bench reads the pseudo-terminal until the text shows.
   Target: under 50 ms.
2. Idle CPU: the REPL at an empty prompt (runtime built), CPU time of the process over
   `--idle` seconds (30 by default), as % of one core. Target: about 0.

Prints a Markdown table. Not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pexpect

from aimon_core.testing import Reply
from aimon_core.testing._loopback_anthropic import stream_events

AIMON = str(Path(sys.executable).with_name("aimon"))
PROBE = "Latency probe alpha "
FIRST_EVENTS = 4  # message_start, ping, content_block_start, the first text delta


class _Stalling:
    """What the server shares with the bench: when it sent, and when to go on."""

    def __init__(self) -> None:
        self.sent_at: list[float] = []
        self.release = threading.Semaphore(0)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    def do_GET(self) -> None:
        self.send_response(404)
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if not body.get("stream"):  # a title or probe call: answer plainly
            self.send_response(404)
            self.end_headers()
            return
        events = stream_events(Reply(text=PROBE + "b" * len(PROBE)), body)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.end_headers()
        for event in events[:FIRST_EVENTS]:
            self.wfile.write(event)
        self.wfile.flush()
        self.server.shared.sent_at.append(time.monotonic())
        self.server.shared.release.acquire(timeout=60)
        for event in events[FIRST_EVENTS:]:
            self.wfile.write(event)
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    shared: _Stalling


def _spawn(base_url: str, home: Path, project: Path) -> pexpect.spawn:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=base_url, AIMON_HOME=str(home),
               AIMON_NO_LOCAL_PROBE="1", PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    child = pexpect.spawn(AIMON, ["--provider", "anthropic", "--model", "claude-sonnet-4-5"],
                          cwd=str(project), env=env, dimensions=(40, 120), encoding="utf-8",
                          timeout=30)
    child.expect_exact("›")
    return child


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_token_latency(child: pexpect.spawn, shared: _Stalling, runs: int) -> list[float]:
    """Return, per run, ms from the first text delta leaving the server to it on screen."""
    out: list[float] = []
    for run in range(runs):
        child.send(f"probe {run}\r")
        child.expect_exact(PROBE.strip())
        seen = time.monotonic()
        out.append((seen - shared.sent_at[-1]) * 1000)
        shared.release.release()
        child.expect_exact("session ")  # the status line: the turn ended
    return out


def idle_cpu(child: pexpect.spawn, seconds: float) -> float:
    """Return the REPL's CPU use at an empty prompt, in % of one core."""
    child.send("/status\r")
    child.expect_exact("Totals")
    time.sleep(1.0)  # let start-up work (MCP, watchers) settle
    before, start = _cpu_seconds(child.pid), time.monotonic()
    time.sleep(seconds)
    used, elapsed = _cpu_seconds(child.pid) - before, time.monotonic() - start
    return 100 * used / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--idle", type=float, default=30.0)
    args = parser.parse_args()
    shared = _Stalling()
    server = _Server(("127.0.0.1", 0), _Handler)
    server.shared = shared
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "proj"
        project.mkdir()
        child = _spawn(f"http://127.0.0.1:{server.server_port}", home, project)
        try:
            latencies = first_token_latency(child, shared, args.runs)
            cpu = idle_cpu(child, args.idle)
        finally:
            child.terminate(force=True)
            server.shutdown()
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| first streamed token → on screen, median of {len(latencies)} | "
          f"{statistics.median(latencies):.1f} ms | < 50 ms |")
    print(f"| same, worst | {max(latencies):.1f} ms | |")
    print(f"| idle CPU at an empty prompt over {args.idle:g} s | {cpu:.2f} % of a core | ~0 % |")


if __name__ == "__main__":
    main()
