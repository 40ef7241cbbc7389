"""The attack suite's harness: one real `aimon -p` per batch of scripted attempts.

A batch is a list of attempts run by ONE aimon process: the loopback model server sends every
attempt's setup calls in a first reply, every attempt's probe call in a second (calls that may
hang in a third), then "done". Each attempt has its own pytest id; its checks read the marker
files it may have left and the tool result aimon sent back to the model in the last request
(or, if aimon had to be killed, the result it printed as stream-json).

Paths in calls, files and checks hold placeholders (`@P@`, `@M@`, ...; see `_attempts`).

The session fixture `outcomes` runs the `BATCHES` of every collected module at once. Under
xdist each worker claims batches through lock files in the run's shared temporary folder and
reads the others' outcomes from JSON files there, so each batch runs once per test run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall, Step

from ._attempts import (
    RUN_TIMEOUT,
    Absent,
    Attempt,
    Batch,
    Check,
    Exists,
    NoSecret,
    Outcome,
    Provider,
    Ran,
    Refused,
    ToolOutcome,
    Unchanged,
    Workspace,
    call_id,
)

AIMON = Path(sys.executable).with_name("aimon")
BIN = AIMON.parent
MODELS: dict[Provider, str] = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4"}
PARALLEL = 2
"""aimon runs at a time in each pytest process (under xdist: in each worker, so up to four)."""

def program_path() -> str:
    """Return the PATH aimon runs with: the venv's bin first (for `rg`), then the test's."""
    return os.pathsep.join([str(BIN), os.environ.get("PATH", "")])


def have(program: str) -> bool:
    """Return whether `program` is on the PATH aimon runs with."""
    return shutil.which(program, path=program_path()) is not None


def cases(batches: Sequence[Batch]) -> list[Any]:
    """Return one pytest param per (batch, attempt), skipping attempts whose program is missing."""
    params = []
    for batch in batches:
        for attempt in batch.attempts:
            marks = []
            if attempt.needs and not have(attempt.needs):
                marks.append(pytest.mark.skip(reason=f"{attempt.needs} is not installed"))
            params.append(pytest.param(batch, attempt, id=f"{batch.name}-{attempt.id}",
                                       marks=marks))
    return params


# ---------------------------------------------------------------------------- running


def base_env(ws: Workspace, server: LoopbackModelServer, provider: Provider
             ) -> dict[str, str]:
    """Return aimon's environment: one provider's key and the loopback server, an isolated
    home."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_", "GIT_"))}
    prefix = provider.upper()
    env.update({f"{prefix}_API_KEY": "k", f"{prefix}_BASE_URL": server.base_url},
               AIMON_NO_LOCAL_PROBE="1", AIMON_HOME=str(ws.home), HOME=str(ws.user_home),
               PATH=program_path(), GIT_CONFIG_NOSYSTEM="1")
    return env


def model_args(provider: Provider) -> list[str]:
    """Return the flags that make aimon talk to `provider`."""
    return ["--provider", provider, "--model", MODELS[provider]]


def git(cwd: Path, *args: str) -> str:
    """Run git for the harness (never for the model) with a fixed identity."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1", GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid", HOME=str(cwd))
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr}")
    return done.stdout


def make_repo(path: Path, files: Mapping[str, str] | None = None) -> Path:
    """Create a git repository at `path` with `files` committed on branch main."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name, text in (files or {"a.txt": "one\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")
    return path


def prepare(batch: Batch, ws: Workspace) -> None:
    """Create the batch's folders, settings, project and attempt files."""
    for folder in (ws.project, ws.mark, ws.outside, ws.home, ws.user_home):
        folder.mkdir(parents=True, exist_ok=True)
    (ws.project / "README").write_text("hello from the readme\n")
    (ws.project / "f").write_text("x\na\nb\n")
    if batch.settings is not None:
        config = ws.home / "config"
        config.mkdir(parents=True, exist_ok=True)
        (config / "settings.json").write_text(ws.expand(json.dumps(batch.settings)))
    if batch.build is not None:
        batch.build(ws)
    for attempt in batch.attempts:
        for raw, text in attempt.files.items():
            path = Path(ws.expand(raw, attempt.id))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(ws.expand(text, attempt.id))
            if path.suffix == ".sh":
                path.chmod(0o755)


def script(batch: Batch, ws: Workspace) -> list[Step]:
    """Return the model's replies: setup calls, then probe calls, then a final answer."""
    setups: list[ScriptedToolCall] = []
    probes: list[ScriptedToolCall] = []
    late: list[ScriptedToolCall] = []
    for index, attempt in enumerate(batch.attempts):
        if attempt.needs and not have(attempt.needs):
            continue
        for number, call in enumerate(attempt.setup):
            setups.append(ScriptedToolCall(name=call.tool, id=call_id(index, number),
                                           input=ws.expand_input(call.input, attempt.id)))
        probe = ScriptedToolCall(name=attempt.call.tool, id=call_id(index),
                                 input=ws.expand_input(attempt.call.input, attempt.id))
        (late if attempt.late else probes).append(probe)
    steps: list[Step] = [Reply(tool_calls=tuple(calls)) for calls in (setups, probes, late)
                         if calls]
    steps.append(Reply(text="done"))
    return steps


def tool_outcomes(body: Mapping[str, Any]) -> dict[str, ToolOutcome]:
    """Return the tool results of a request body (either wire format), by tool_use id.

    OpenAI's `tool` messages have no error flag (`merged_results` prefers the flag stream-json
    printed).
    """
    request = RecordedRequest(provider="", path="", headers={}, body=body)
    return {call_id: ToolOutcome(is_error=is_error, text=text)
            for call_id, (is_error, text) in request.tool_outcomes().items()}


def snapshot(batch: Batch, ws: Workspace) -> dict[str, str | None]:
    """Record the content of every file an `Unchanged` check names (None: missing)."""
    shots: dict[str, str | None] = {}
    for attempt in batch.attempts:
        for check in attempt.checks:
            if isinstance(check, Unchanged):
                path = Path(ws.expand(check.path, attempt.id))
                shots[str(path)] = path.read_text(errors="replace") if path.is_file() else None
    return shots


def run_aimon(ws: Workspace, server: LoopbackModelServer, provider: Provider,
              args: Sequence[str], env: Mapping[str, str] = {}, timeout: float = RUN_TIMEOUT
              ) -> tuple[int | None, str, str]:
    """Run `aimon ARGS` in the project; return (exit code or None on timeout, stdout, stderr)."""
    full_env = {**base_env(ws, server, provider), **env}
    try:
        done = subprocess.run([str(AIMON), *args], cwd=ws.project, env=full_env,
                              capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as expired:
        return None, _text(expired.stdout), _text(expired.stderr)
    return done.returncode, done.stdout, done.stderr


def release_fifos(root: Path) -> None:
    """Open and close both ends of every FIFO under `root`, so no process stays blocked on one.

    A killed aimon leaves its children behind (a ripgrep stuck opening a FIFO, say); this
    lets them see end-of-file and exit instead of lingering after the test run.
    """
    for path in root.rglob("*"):
        if not path.is_fifo():
            continue
        for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
            with contextlib.suppress(OSError):  # ENXIO: no reader waits on this end
                os.close(os.open(path, flags))


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else data or ""


def streamed_results(stdout: str) -> dict[str, ToolOutcome]:
    """Return the tool results of stream-json output, by tool_use id."""
    found: dict[str, ToolOutcome] = {}
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # not stream-json, or a line cut short by a killed run
        if isinstance(event, dict) and event.get("type") == "tool_result":
            found[str(event.get("tool_use_id"))] = ToolOutcome(
                is_error=bool(event.get("is_error")), text=str(event.get("content", "")),
                duration_ms=event.get("duration_ms"), sent=False)
    return found


def merged_results(last: Mapping[str, Any], stdout: str) -> dict[str, ToolOutcome]:
    """Prefer what the model was sent; add durations, and results a killed run never sent.

    The error flag comes from stream-json when it printed one (OpenAI's wire has none).
    """
    sent = tool_outcomes(last)
    streamed = streamed_results(stdout)
    merged = {**streamed, **sent}
    for key, result in sent.items():
        if key in streamed:
            merged[key] = ToolOutcome(is_error=streamed[key].is_error, text=result.text,
                                      duration_ms=streamed[key].duration_ms)
    return merged


def data_modes(ws: Workspace) -> dict[str, int]:
    """Return the permission bits of AIMON_HOME/data and everything in it."""
    data = ws.home / "data"
    if not data.exists():
        return {}
    return {str(path.relative_to(ws.home)) + ("/" if path.is_dir() else ""):
            stat.S_IMODE(path.lstat().st_mode) for path in [data, *data.rglob("*")]}


def run_batch(batch: Batch, ws: Workspace) -> Outcome:
    """Prepare the workspace, run aimon once for the whole batch and collect what it left."""
    prepare(batch, ws)
    shots = snapshot(batch, ws)
    started = time.monotonic()
    steps = batch.steps(ws) if batch.steps is not None else script(batch, ws)
    with LoopbackModelServer(steps, provider=batch.provider) as server:
        args = [*model_args(batch.provider), "-p", ws.expand(batch.prompt),
                "--output-format", "stream-json", *batch.args]
        code, out, err = run_aimon(ws, server, batch.provider, args, batch.env, batch.timeout)
        if code is None:
            release_fifos(ws.root)
        requests = list(server.requests)
        remaining = server.remaining
    last = requests[-1].body if requests else {}
    return Outcome(root=str(ws.root), returncode=code, stdout=out, stderr=err,
                   results=merged_results(last, out), snapshots=shots, modes=data_modes(ws),
                   remaining=remaining, bodies=json.dumps([r.body for r in requests]),
                   seconds=time.monotonic() - started)


def _load(path: Path) -> Outcome:
    raw = json.loads(path.read_text())
    raw["results"] = {k: ToolOutcome(**v) for k, v in raw["results"].items()}
    return Outcome(**raw)


def _save(outcome: Outcome, cache: Path) -> None:
    temp = cache.with_suffix(".tmp")
    temp.write_text(json.dumps(asdict(outcome)))
    temp.rename(cache)


def claim_and_run(batch: Batch, shared: Path) -> None:
    """Run `batch` unless another xdist worker is running it or already did."""
    cache = shared / f"{batch.name}.json"
    with (shared / f"{batch.name}.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return  # another worker has it; `wait_for` picks up its outcome
        if not cache.exists():
            _save(run_batch(batch, Workspace(root=shared / batch.name)), cache)


def wait_for(batch: Batch, shared: Path) -> Outcome:
    """Return the outcome of `batch` once whichever worker runs it has finished."""
    cache = shared / f"{batch.name}.json"
    with (shared / f"{batch.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cache.exists():  # its worker died mid-run
            _save(run_batch(batch, Workspace(root=shared / f"{batch.name}.again")), cache)
        return _load(cache)


def run_all(batches: Sequence[Batch], shared: Path) -> dict[str, Outcome]:
    """Run every batch once across all xdist workers, PARALLEL at a time in each worker."""
    queue = list(batches)
    guard = threading.Lock()

    def work() -> None:
        while True:
            with guard:
                if not queue:
                    return
                batch = queue.pop(0)
            claim_and_run(batch, shared)

    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        for future in [pool.submit(work) for _ in range(PARALLEL)]:
            future.result()
    return {batch.name: wait_for(batch, shared) for batch in batches}


@pytest.fixture(scope="session")
def shared_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
               ) -> Path:
    """Return a folder shared by every xdist worker of this test run."""
    base = tmp_path_factory.getbasetemp()
    worker = hasattr(request.config, "workerinput")
    root = (base.parent if worker else base) / "security"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session")
def outcomes(request: pytest.FixtureRequest, shared_dir: Path) -> dict[str, Outcome]:
    """Run the `BATCHES` of every collected module of this suite; map batch names to outcomes.

    All batches start at once, whichever module asks first, so that the runs of different
    modules (and the xdist workers) overlap; each batch still runs only once.
    """
    here = Path(__file__).parent
    batches: dict[str, Batch] = {}
    for item in request.session.items:
        if item.path.parent == here:
            for batch in getattr(getattr(item, "module", None), "BATCHES", ()):
                batches.setdefault(batch.name, batch)
    return run_all(list(batches.values()), shared_dir)


# ---------------------------------------------------------------------------- judging


def problems(batch: Batch, outcome: Outcome, attempt: Attempt) -> list[str]:
    """Return what went wrong for `attempt` (empty: it held)."""
    result = outcome.results.get(call_id(batch.attempts.index(attempt)))
    if result is None:
        return [f"no tool result came back for {attempt.id!r}: {outcome.summary()}"]
    shown = f"result (error={result.is_error}): {result.text[:700]!r}"
    if not result.sent:
        shown += f" (seen in stream-json only: {outcome.summary()})"
    found = (problem(check, outcome, attempt.id, result) for check in attempt.checks)
    return [f"{text}; {shown}" for text in found if text is not None]


def problem(check: Check, outcome: Outcome, attempt_id: str, result: ToolOutcome) -> str | None:
    """Return how `check` failed, or None."""
    ws = outcome.workspace
    match check:
        case Absent(path=raw):
            path = Path(ws.expand(raw, attempt_id))
            if path.exists() or path.is_symlink():
                return f"{path} was created: the attack ran"
        case Exists(path=raw):
            path = Path(ws.expand(raw, attempt_id))
            if not path.exists():
                return f"{path} is missing"
        case Ran(contains=text):
            if result.is_error or text not in result.text:
                return f"control failed (wanted success with {text!r})"
        case Refused(absent=text):
            if not result.is_error or (text and text in result.text):
                return "not refused"
        case Unchanged(path=raw):
            path = Path(ws.expand(raw, attempt_id))
            before = outcome.snapshots[str(path)]
            now = path.read_text(errors="replace") if path.is_file() else None
            if now != before:
                return f"{path} changed: {before!r} -> {now!r}"
        case NoSecret(secret=secret):
            if secret in result.text:
                return "the secret reached the model"
    return None


def check_attempt(batch: Batch, outcomes: Mapping[str, Outcome], attempt: Attempt) -> None:
    """Fail the test with every problem of `attempt`."""
    found = problems(batch, outcomes[batch.name], attempt)
    if found:
        pytest.fail("\n".join(found), pytrace=False)
