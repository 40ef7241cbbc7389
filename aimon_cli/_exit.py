"""Leave the process without the interpreter's teardown, once everything durable is out."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """Flush stdout, stderr and the log handlers, then end the process with `code` at once.

    Call it only when everything durable is written: the session record (appended with
    plain `os.write`s, so already in the kernel's hands, and fsynced at turn boundaries),
    the output, the SessionEnd hooks (run by `LiveSession.close`). What is skipped is the
    interpreter's teardown: garbage-collecting every module and object the provider SDK and
    pydantic created, which took 354 ms after `main()` returned in `aimon -p` with
    Anthropic (issue 13). `atexit` handlers are skipped too; aimon registers none, and the
    thread pools asyncio uses are shut down by `asyncio.run` before this runs.
    """
    if _needs_teardown():
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe must not change the status
            stream.flush()
    with contextlib.suppress(Exception):
        logging.shutdown()
    os._exit(code)


def _needs_teardown() -> bool:
    """Tell whether something in the process writes its results at exit.

    A profiler or tracer (`python -m cProfile -o`, a debugger) and coverage.py save their
    data in `atexit` handlers; `AIMON_FULL_EXIT=1` asks for the ordinary exit too.
    """
    return (
        os.environ.get("AIMON_FULL_EXIT") == "1"
        or sys.getprofile() is not None
        or sys.gettrace() is not None
        or "coverage" in sys.modules
    )
