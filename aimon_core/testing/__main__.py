"""Run the loopback model server in the foreground: `python -m aimon_core.testing serve`."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import threading
from pathlib import Path

from ._loopback import LoopbackModelServer
from ._loopback_script import loads_script


def main(argv: list[str] | None = None) -> int:
    """Serve a JSON script until SIGTERM or Ctrl-C; print `READY <base url>` once listening."""
    parser = argparse.ArgumentParser(prog="python -m aimon_core.testing")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve a scripted model API on 127.0.0.1")
    serve.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one")
    serve.add_argument("--script", type=Path, required=True, help="JSON list of steps")
    serve.add_argument("--provider", choices=("anthropic", "openai"), default=None)
    args = parser.parse_args(argv)
    script = loads_script(json.loads(args.script.read_text(encoding="utf-8")))
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with LoopbackModelServer(script, provider=args.provider, port=args.port) as server:
        print(f"READY {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            done.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
