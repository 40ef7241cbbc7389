"""Run `aimon` with the parts of a resume timed (CPU), for `bench_fix4.py resume --parts`.

Usage: python bench/resume_parts.py AIMON-ARGS...   (prints one JSON line on stderr at exit)

Wraps, by name, what a resumed turn does with its whole history: loading the session file,
`turn_history` (its repair walk), the compactor's token estimate and the first request
body's encoding (either wire). Works on any tree that has those names (run it through
PYTHONPATH for a "before" tree).
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

TIMES: dict[str, float] = {}


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            if name not in TIMES:  # the first call: the one that carries the whole history
                TIMES[name] = (time.process_time() - started) * 1000

    return wrapper


def _wrap(module: str, owner: str | None, name: str, label: str) -> None:
    target: Any = importlib.import_module(module)
    if owner:
        target = getattr(target, owner)
    setattr(target, name, _timed(label, getattr(target, name)))


def _report() -> None:
    sys.stderr.write("resume-parts " + json.dumps(TIMES) + "\n")
    sys.stderr.flush()


def main() -> None:
    _wrap("aimon_core.session._file_store", "FileSessionRecordStore", "load", "load")
    _wrap("aimon_core.compact._estimate", "RunningEstimate", "messages", "estimate")
    _wrap("aimon_core.llm._anthropic", "_BodyEncoder", "encode", "encode")
    _wrap("aimon_core.llm._openai", "_BodyEncoder", "encode", "encode")  # one wire a run
    history = importlib.import_module("aimon_core.live._history")
    timed_history = _timed("turn_history", history.turn_history)
    # Wherever the live session calls it from: `_keeper` now, `_live` in older trees.
    for user in ("aimon_core.live._keeper", "aimon_core.live._live"):
        try:
            module: Any = importlib.import_module(user)
        except ModuleNotFoundError:
            continue
        if hasattr(module, "turn_history"):
            module.turn_history = timed_history
    leave = os._exit

    def exit_reporting(code: int) -> None:  # print mode leaves through os._exit
        _report()
        leave(code)

    os._exit = exit_reporting  # type: ignore[assignment]
    from aimon_cli.app import main as aimon

    aimon(sys.argv[1:])
    _report()


if __name__ == "__main__":
    main()
