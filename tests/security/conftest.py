"""The attack suite's harness: one real `aimon -p` per batch of scripted attempts.

A batch is a list of attempts run by ONE aimon process: the loopback model server sends every
attempt's setup calls in a first reply, every attempt's probe call in a second, then "done". Each
attempt then has its own pytest id; its checks read the marker files it may have left and the
tool result text aimon sent back to the model in the last request.

Paths in calls, files and checks are written with placeholders, expanded per attempt:

- ``@P@`` the project (aimon's working directory), ``@X@`` a folder outside it;
- ``@MARK@`` the marker folder (outside the project), ``@M@`` this attempt's marker file in it,
  ``@D@`` this attempt's marker directory in it (for deletions that must not happen);
- ``@O@`` this attempt's victim file outside the project (for edits that must not happen).

Under xdist each worker runs the module fixtures; a lock file and a JSON cache in the run's
shared temporary folder make sure a batch runs once per test run.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall, Step

AIMON = Path(sys.executable).with_name("aimon")
BIN = AIMON.parent
MODEL = "claude-sonnet-5-5"
RUN_TIMEOUT = 60.0
PARALLEL = 2

# ---------------------------------------------------------------------------- checks


@dataclass(frozen=True, slots=True, kw_only=True)
class Absent:
    """The path (default: the attempt's marker) must not exist after the run."""

    path: str = "@M@"


@dataclass(frozen=True, slots=True, kw_only=True)
class Exists:
    """Control: the path (default: the attempt's marker) must exist after the run."""

    path: str = "@M@"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ran:
    """Control: the call succeeded, and its result holds `contains`."""

    contains: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """The call came back as an error, and its result lacks `absent` (a sign it ran)."""

    absent: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Unchanged:
    """The file (default: the attempt's victim) has the content it had before the run."""

    path: str = "@O@"


@dataclass(frozen=True, slots=True, kw_only=True)
class NoSecret:
    """`secret` does not appear in the call's result."""

    secret: str


Check = Absent | Exists | Ran | Refused | Unchanged | NoSecret

# ---------------------------------------------------------------------------- attempts


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One tool call the scripted model makes (placeholders not yet expanded)."""

    tool: str
    input: Mapping[str, Any]


def bash(command: str, timeout_ms: int = 20_000) -> Call:
    """Return a Bash call."""
    return Call(tool="Bash", input={"command": command, "timeout": timeout_ms})


def read(path: str) -> Call:
    """Return a Read call."""
    return Call(tool="Read", input={"file_path": path})


def write(path: str, content: str) -> Call:
    """Return a Write call."""
    return Call(tool="Write", input={"file_path": path, "content": content})


def edit(path: str, old: str, new: str) -> Call:
    """Return an Edit call."""
    return Call(tool="Edit", input={"file_path": path, "old_string": old, "new_string": new})


def tool(name: str, **inputs: Any) -> Call:
    """Return a call of any tool."""
    return Call(tool=name, input=inputs)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Attempt:
    """One attack (or one control) and what must hold after it."""

    id: str
    call: Call
    checks: tuple[Check, ...]
    setup: tuple[Call, ...] = ()
    """Calls made in the batch's first reply, before every probe."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Files (absolute placeholder paths) the harness writes before the run."""
    needs: str | None = None
    """A program that must be on PATH, else the attempt is skipped."""
    late: bool = False
    """Make the probe in a reply of its own after the others (for calls that may hang)."""

    def __repr__(self) -> str:
        return f"Attempt({self.id!r}: {self.call.tool} {dict(self.call.input)!r})"


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Batch:
    """Attempts run by one aimon process with the same flags and settings."""

    name: str
    attempts: tuple[Attempt, ...]
    args: tuple[str, ...] = ()
    settings: Mapping[str, Any] | None = None
    """User-level settings.json (under AIMON_HOME), if any."""
    env: Mapping[str, str] = field(default_factory=dict)
    build: Callable[[Workspace], None] | None = None
    """Prepares the project (repositories, files) before the run."""
    steps: Callable[[Workspace], list[Step]] | None = None
    """The model's replies, instead of the attempts' calls (for faults of the model itself)."""
    timeout: float = RUN_TIMEOUT
    """Seconds before the run counts as hung and is killed."""

    def __repr__(self) -> str:
        return f"Batch({self.name!r}, args={self.args!r}, {len(self.attempts)} attempts)"


@dataclass(frozen=True, slots=True, kw_only=True)
class Workspace:
    """The folders of one batch."""

    root: Path

    @property
    def project(self) -> Path:
        return self.root / "proj"

    @property
    def mark(self) -> Path:
        return self.root / "mark"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def user_home(self) -> Path:
        return self.root / "userhome"

    def expand(self, text: str, attempt_id: str = "") -> str:
        """Replace the placeholders in `text`."""
        table = {
            "@MARK@": str(self.mark),
            "@M@": str(self.mark / attempt_id),
            "@D@": str(self.mark / f"{attempt_id}.d"),
            "@O@": str(self.outside / attempt_id),
            "@P@": str(self.project),
            "@X@": str(self.outside),
        }
        return re.sub("|".join(map(re.escape, table)), lambda m: table[m.group(0)], text)

    def expand_input(self, value: Any, attempt_id: str) -> Any:
        """Expand placeholders in every string of a tool input."""
        match value:
            case str():
                return self.expand(value, attempt_id)
            case Mapping():
                return {k: self.expand_input(v, attempt_id) for k, v in value.items()}
            case list() | tuple():
                return [self.expand_input(v, attempt_id) for v in value]
            case _:
                return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutcome:
    """What aimon sent back to the model for one tool call."""

    is_error: bool
    text: str
    duration_ms: float | None = None
    """From stream-json output, when aimon printed it."""
    sent: bool = True
    """False when only stream-json shows it (the run was killed before sending it)."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Outcome:
    """What one batch run left behind (JSON-serialisable, shared between xdist workers)."""

    root: str
    returncode: int | None
    """None when aimon did not finish within RUN_TIMEOUT."""
    stdout: str
    stderr: str
    results: Mapping[str, ToolOutcome]
    """By tool_use id: from the last request, else (a killed run) from stream-json output."""
    snapshots: Mapping[str, str | None]
    modes: Mapping[str, int]
    """Permission bits of AIMON_HOME/data and everything in it right after the run, by path
    relative to AIMON_HOME (folders end with a slash)."""
    remaining: int
    """Scripted model replies the run never asked for."""
    bodies: str
    """Every request body the model server received, as JSON text."""
    seconds: float

    @property
    def workspace(self) -> Workspace:
        return Workspace(root=Path(self.root))

    def __repr__(self) -> str:
        return f"Outcome({self.root!r}, exit {self.returncode})"

    def summary(self) -> str:
        """Return a short account of the run for failure messages."""
        return (f"aimon exit {self.returncode} after {self.seconds:.1f}s; "
                f"stderr: {self.stderr[-600:]!r}")


def call_id(index: int, setup: int | None = None) -> str:
    """Return the tool_use id of attempt `index` (or of its `setup`-th setup call)."""
    return f"toolu_a{index:03d}" if setup is None else f"toolu_a{index:03d}_s{setup}"


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


def base_env(ws: Workspace, server: LoopbackModelServer) -> dict[str, str]:
    """Return aimon's environment: no provider keys, an isolated home, the loopback server."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_", "GIT_"))}
    env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.base_url,
               AIMON_NO_LOCAL_PROBE="1", AIMON_HOME=str(ws.home), HOME=str(ws.user_home),
               PATH=program_path(), GIT_CONFIG_NOSYSTEM="1")
    return env


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
    """Return the tool results of a request body, by tool_use id."""
    found: dict[str, ToolOutcome] = {}
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") != "tool_result":
                continue
            inner = block.get("content", "")
            text = inner if isinstance(inner, str) else "".join(
                part.get("text", "") for part in inner if isinstance(part, dict))
            found[block["tool_use_id"]] = ToolOutcome(is_error=bool(block.get("is_error")),
                                                      text=text)
    return found


def snapshot(batch: Batch, ws: Workspace) -> dict[str, str | None]:
    """Record the content of every file an `Unchanged` check names (None: missing)."""
    shots: dict[str, str | None] = {}
    for attempt in batch.attempts:
        for check in attempt.checks:
            if isinstance(check, Unchanged):
                path = Path(ws.expand(check.path, attempt.id))
                shots[str(path)] = path.read_text(errors="replace") if path.is_file() else None
    return shots


def run_aimon(ws: Workspace, server: LoopbackModelServer, args: Sequence[str],
              env: Mapping[str, str] = {}, timeout: float = RUN_TIMEOUT
              ) -> tuple[int | None, str, str]:
    """Run `aimon ARGS` in the project; return (exit code or None on timeout, stdout, stderr)."""
    full_env = {**base_env(ws, server), **env}
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
            try:
                os.close(os.open(path, flags))
            except OSError:
                pass  # ENXIO: no reader waits on this end


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
    """Prefer what the model was sent; add durations, and results a killed run never sent."""
    sent = tool_outcomes(last)
    streamed = streamed_results(stdout)
    merged = {**streamed, **sent}
    for key, result in sent.items():
        if key in streamed:
            merged[key] = ToolOutcome(is_error=result.is_error, text=result.text,
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
    with LoopbackModelServer(steps, provider="anthropic") as server:
        args = ["--model", MODEL, "-p", "go", "--output-format", "stream-json", *batch.args]
        code, out, err = run_aimon(ws, server, args, batch.env, batch.timeout)
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
    batches: dict[str, Batch] = {}
    for item in request.session.items:
        for batch in getattr(getattr(item, "module", None), "BATCHES", ()):
            batches.setdefault(batch.name, batch)
    return run_all(list(batches.values()), shared_dir)


# ---------------------------------------------------------------------------- judging


def problems(batch: Batch, outcome: Outcome, attempt: Attempt) -> list[str]:
    """Return what went wrong for `attempt` (empty: it held)."""
    ws = outcome.workspace
    index = batch.attempts.index(attempt)
    result = outcome.results.get(call_id(index))
    found: list[str] = []
    if result is None:
        return [f"no tool result came back for {attempt.id!r}: {outcome.summary()}"]
    shown = f"result (error={result.is_error}): {result.text[:700]!r}"
    if not result.sent:
        shown += f" (seen in stream-json only: {outcome.summary()})"
    for check in attempt.checks:
        match check:
            case Absent(path=raw):
                path = Path(ws.expand(raw, attempt.id))
                if path.exists() or path.is_symlink():
                    found.append(f"{path} was created: the attack ran; {shown}")
            case Exists(path=raw):
                path = Path(ws.expand(raw, attempt.id))
                if not path.exists():
                    found.append(f"{path} is missing; {shown}")
            case Ran(contains=text):
                if result.is_error or text not in result.text:
                    found.append(f"control failed (wanted success with {text!r}); {shown}")
            case Refused(absent=text):
                if not result.is_error or (text and text in result.text):
                    found.append(f"not refused; {shown}")
            case Unchanged(path=raw):
                path = Path(ws.expand(raw, attempt.id))
                now = path.read_text(errors="replace") if path.is_file() else None
                if now != outcome.snapshots[str(path)]:
                    found.append(f"{path} changed: {outcome.snapshots[str(path)]!r} -> "
                                 f"{now!r}; {shown}")
            case NoSecret(secret=secret):
                if secret in result.text:
                    found.append(f"the secret reached the model; {shown}")
    return found


def check_attempt(batch: Batch, outcomes: Mapping[str, Outcome], attempt: Attempt) -> None:
    """Fail the test with every problem of `attempt`."""
    found = problems(batch, outcomes[batch.name], attempt)
    assert not found, "\n".join(found)
