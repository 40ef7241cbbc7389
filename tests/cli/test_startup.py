"""While aimon starts, the collector is held."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_cli import _startup
from aimon_cli._approval import Questions
from aimon_cli._runtime import ReplRuntimes
from aimon_cli._store import default_store
from aimon_core.runtime import RuntimeFlags, RuntimeSetupError
from aimon_core.testing import LoopbackModelServer, Reply
from tests.cli.conftest import MODEL, PROVIDER, provider_env


@pytest.fixture
def started() -> Iterator[None]:
    """Leave the collector as it was afterwards."""
    frozen = gc.get_freeze_count()
    try:
        yield
    finally:
        _startup.finish()
        gc.enable()
        if gc.get_freeze_count() != frozen:
            gc.unfreeze()


def test_begin_holds_the_collector_and_finish_resumes_it_past_what_exists(started: None) -> None:
    _startup.begin()
    assert not gc.isenabled()
    kept: list[list[int]] = [[]]  # an object allocated while held
    _startup.finish()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # what start allocated is out of later collections
    assert gc.is_tracked(kept)


def test_finish_without_begin_changes_nothing(started: None) -> None:
    frozen = gc.get_freeze_count()
    _startup.finish()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen  # a library caller's interpreter is left alone


def test_the_repl_finishes_starting_when_its_first_session_cannot_open(
        tmp_path: Path, started: None) -> None:
    runtimes = ReplRuntimes(tmp_path, RuntimeFlags(provider="nope"), default_store(),
                            Questions(tmp_path))
    _startup.begin()
    with pytest.raises(RuntimeSetupError, match="nope"):
        asyncio.run(runtimes.open_session(None))
    assert gc.isenabled()


# Runs `aimon -p` in-process, noting whether the collector runs while the runtime is built
# and while the turn runs; prints the notes as JSON where aimon would have exited.
PRINT_RUN = textwrap.dedent("""
    import gc, json, sys
    from aimon_cli import _commands, _exit, _print
    from aimon_core.runtime import AgentRuntimeRegistry

    notes = {}
    build, turn = AgentRuntimeRegistry.get, _print.run_print

    async def noted_build(self, *args, **kwargs):
        notes["collecting while building"] = gc.isenabled()
        return await build(self, *args, **kwargs)

    async def noted_turn(*args, **kwargs):
        import asyncio, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        notes["child watcher"] = type(asyncio.get_child_watcher()).__name__
        notes["collecting during the turn"] = gc.isenabled()
        notes["frozen"] = gc.get_freeze_count()
        return await turn(*args, **kwargs)

    def noted_leave(code):
        notes["exit"] = code
        sys.stdout.write("\\n" + json.dumps(notes) + "\\n")
        sys.stdout.flush()
        _exit.os._exit(0)

    AgentRuntimeRegistry.get, _print.run_print = noted_build, noted_turn
    _exit.leave = noted_leave
    _commands.run(sys.argv[1:])
""")


def test_print_mode_starts_with_the_collector_held(tmp_path: Path) -> None:
    with LoopbackModelServer([Reply(text="one")], provider=PROVIDER) as server:
        env = {**os.environ, **provider_env(server), "AIMON_NO_LOCAL_PROBE": "1"}
        done = subprocess.run(
            [sys.executable, "-c", PRINT_RUN, "--provider", PROVIDER, "--model", MODEL,
             "-p", "hello"], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=60, check=False)
        assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout.splitlines()[-1])
    assert first["collecting while building"] is False
    assert first["collecting during the turn"] is True
    assert first["frozen"] > 10_000  # the modules, classes and SDK objects of the start
    assert first["exit"] == 0
    if sys.version_info < (3, 12):  # 3.12 watches pidfds itself (aimon_cli/_children.py)
        assert first["child watcher"] == "_PidfdWatcher"
