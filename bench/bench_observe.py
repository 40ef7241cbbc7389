"""Benchmark issue 32: what the cost ledger and tracing add, and what OTLP export adds.

Run:
  .venv/bin/python bench/bench_observe.py ab --before TREE [--runs N] [--otlp]
      `aimon -p` on bench_fix4's four-call fix and `aimon --version`, interleaved: this
      checkout (after) against TREE (before, a checkout of main run via PYTHONPATH), each in
      a fresh AIMON_HOME: wall and CPU (user + system of the process and its children),
      medians. `--otlp` adds "after, exporting": the same run with OTEL_EXPORTER_OTLP_ENDPOINT
      set to a loopback receiver that answers 200.
  .venv/bin/python bench/bench_observe.py imports
      How many opentelemetry modules `aimon -p` imports: with tracing off, and with
      OTEL_EXPORTER_OTLP_ENDPOINT set.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from bench_fix4 import AIMON, _timed, aimon_args, fix4_responder, make_project, provider_env

from aimon_core.testing import LoopbackModelServer


class _Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def _receiver() -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def ab(runs: int, before: str, otlp: bool) -> None:
    base = Path(tempfile.mkdtemp(prefix="aimon-observe-"))
    project = make_project(base)
    variants: list[tuple[str, dict[str, str]]] = [
        ("before", {"PYTHONPATH": before}), ("after", {})]
    if otlp:
        variants.append(("after, exporting", {"OTEL_EXPORTER_OTLP_ENDPOINT": _receiver()}))
    rows: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    with LoopbackModelServer(fix4_responder(project)) as server:
        for run in range(runs):  # interleaved: before, after, before, after ...
            for name, extra in variants:
                env = {k: v for k, v in provider_env("openai", server).items()
                       if not k.startswith("OTEL_")}
                env.update(extra, AIMON_HOME=str(base / f"home-{name}-{run}"))
                for what, args in (("aimon -p (fix4)", aimon_args("openai")),
                                   ("aimon --version", [AIMON, "--version"])):
                    wall, cpu = _timed(args, env, project)
                    walls, cpus = rows.setdefault((what, name), ([], []))
                    walls.append(wall)
                    cpus.append(cpu)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| command | code | wall (median) | CPU (median) | CPU (min) | runs |")
    print("|---|---|---|---|---|---|")
    for (what, name), (walls, cpus) in sorted(rows.items()):
        print(f"| {what} | {name} | {statistics.median(walls) * 1000:.0f} ms | "
              f"{statistics.median(cpus) * 1000:.0f} ms | {min(cpus) * 1000:.0f} ms | "
              f"{len(cpus)} |")


def imports() -> None:
    base = Path(tempfile.mkdtemp(prefix="aimon-observe-"))
    project = make_project(base)
    with LoopbackModelServer(fix4_responder(project)) as server:
        for name, extra in (("tracing off", {}),
                            ("OTEL_EXPORTER_OTLP_ENDPOINT set", {
                                "OTEL_EXPORTER_OTLP_ENDPOINT": _receiver()})):
            env = {k: v for k, v in provider_env("openai", server).items()
                   if not k.startswith("OTEL_")}
            env.update(extra, AIMON_HOME=str(base / name.replace(" ", "-")))
            # -X importtime tells every import as it happens (aimon leaves with os._exit).
            done = subprocess.run([sys.executable, "-X", "importtime", *aimon_args("openai")],
                                  env=env, cwd=project, capture_output=True, text=True,
                                  check=True)
            found = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()
                     if line.startswith("import time:") and "opentelemetry" in line]
            print(f"{name}: {len(found)} opentelemetry modules imported "
                  f"({', '.join(found[:3]) or 'none'}{', ...' if len(found) > 3 else ''})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    ab_parser = commands.add_parser("ab")
    ab_parser.add_argument("--before", required=True,
                           help="a source tree to compare (run via PYTHONPATH)")
    ab_parser.add_argument("--runs", type=int, default=10)
    ab_parser.add_argument("--otlp", action="store_true")
    commands.add_parser("imports")
    args = parser.parse_args()
    if args.command == "ab":
        ab(args.runs, args.before, args.otlp)
    else:
        imports()


if __name__ == "__main__":
    main()
