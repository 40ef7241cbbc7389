"""Benchmark issue 13: `aimon -p` on a four-call fix against a bare-SDK loop, iteration costs.

Run:
  .venv/bin/python bench/bench_fix4.py serve [--latency S]   # a loopback model server; prints
                                                             # its env, runs until Ctrl-C
  .venv/bin/python bench/bare_loop.py P                      # the bare-SDK loop (env from serve)
  .venv/bin/python bench/bench_fix4.py resume [--runs N] [--before TREE] [--parts]
                                             [--provider anthropic|openai]
                                                             # a 10,000-message resume: CPU over
                                                             # a 10-message one, or its parts
  .venv/bin/python bench/bench_fix4.py warm [--runs N] [--provider anthropic|openai]
                                                             # aimon -p with the service running
                                                             # (warm), without (cold), and the
                                                             # bare-SDK loop: wall and CPU
  .venv/bin/python bench/bench_fix4.py gaps [--runs N] [--calls N] [--tools Glob,Read,Bash]
                                             [--before TREE] [--after TREE] [--bare]
                                                             # per-iteration and first-iteration
                                                             # cost, from request arrival times

`serve` writes a project folder (calc.py with a sign bug, test_calc.py) and prints the
environment and the commands to time; whole-process times are taken outside (e.g. with
`/usr/bin/time` or `hyperfine`, interleaving `aimon -p` and the bare loop). The fix is four
model calls: Read calc.py, Edit it, Bash `python3 test_calc.py`, answer. The server decides
each step from the request (how many tool results it holds, what Read returned), so every run
does the same work: the Edit flips the sign either way. `--latency S` makes the model wait S
seconds before each answer, as a real model's time to first token does: what aimon adds is
then seen against the whole wait a user has.

`gaps` runs `aimon -p` with a model that calls one tool N times — Glob (an `rg` process),
Read (no process) or Bash `echo N` (a `bash -c`) — and takes the time between the arrivals of
consecutive requests at the server: an instant model, so a gap is exactly what aimon spends on
one iteration (stream end, tool, transcript, next request). The first gap is the first
iteration; the median of the rest is the steady cost.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall

AIMON = str(Path(sys.executable).with_name("aimon"))
MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4"}
BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\nprint('add(2, 3) =', add(2, 3))\n"
PROMPT = "add(2, 3) should be 5; fix calc.py and run test_calc.py"


def fix4_responder(project: Path) -> Callable[[RecordedRequest], Reply]:
    """The four-call fix, decided from each request: Read, Edit, Bash, answer."""
    calc = str(project / "calc.py")

    def respond(request: RecordedRequest) -> Reply:
        done = list(request.tool_results().values())  # oldest first
        match len(done):
            case 0:
                return Reply(text="Let me look.", tool_calls=(
                    ScriptedToolCall(name="Read", input={"file_path": calc}),))
            case 1:
                old, new = ("a - b", "a + b") if "a - b" in done[0] else ("a + b", "a - b")
                return Reply(tool_calls=(ScriptedToolCall(name="Edit", input={
                    "file_path": calc, "old_string": old, "new_string": new}),))
            case 2:
                return Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
                    "command": "python3 test_calc.py", "description": "Run the test"}),))
        return Reply(text="Fixed `calc.py`: `add` had the wrong sign. The test passes.")

    return respond


def make_project(base: Path) -> Path:
    project = base / "proj"
    project.mkdir(parents=True, exist_ok=True)
    (project / "calc.py").write_text(BUGGY)
    (project / "test_calc.py").write_text(TEST)
    return project


def provider_env(provider: str, server: LoopbackModelServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env["AIMON_NO_LOCAL_PROBE"] = "1"
    if provider == "anthropic":
        env.update(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=server.base_url)
    else:
        env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=server.openai_base_url)
    return env


def aimon_args(provider: str, prompt: str = PROMPT) -> list[str]:
    return [AIMON, "--provider", provider, "--model", MODELS[provider], "-p", prompt,
            "--allowed-tools", "Edit Bash"]


def serve(latency: float = 0.0) -> None:
    base = Path(tempfile.mkdtemp(prefix="aimon-fix4-"))
    project = make_project(base)
    bare = Path(__file__).with_name("bare_loop.py")
    fix = fix4_responder(project)

    def respond(request: RecordedRequest) -> Reply:
        time.sleep(latency)  # the server's own thread: one client, one request at a time
        return fix(request)

    with LoopbackModelServer(respond) as server:
        print(f"# project: {project}")
        for provider in MODELS:
            env = provider_env(provider, server)
            keys = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL") if provider == "anthropic" \
                else ("OPENAI_API_KEY", "OPENAI_BASE_URL")
            pairs = [f"{k}={env[k]}" for k in keys]
            aimon = ["env", f"AIMON_HOME={base / 'home'}", "AIMON_NO_LOCAL_PROBE=1", *pairs,
                     *aimon_args(provider)]
            print(f"{provider}: {shlex.join(aimon)}")
            bare_loop = ["env", *pairs, sys.executable, str(bare), provider]
            print(f"{provider} bare: {shlex.join(bare_loop)}")
        sys.stdout.flush()
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


# --- per-iteration and first-iteration cost ------------------------------------------------


# The tool each iteration calls: Glob (one `rg` process), Read (no process: the cheapest
# iteration) and Bash `echo N` (one `bash -c`: the floor the issue names).
GAP_TOOLS = ("Glob", "Read", "Bash")


def _gap_call(tool: str, done: int) -> ScriptedToolCall:
    match tool:
        case "Glob":
            return ScriptedToolCall(name="Glob", input={"pattern": f"*{done % 7}.md"})
        case "Read":
            return ScriptedToolCall(name="Read", input={"file_path": f"doc{done % 7}.md"})
    # `echo N`: the same call three times in a row would stop the turn (loop detection).
    return ScriptedToolCall(name="Bash", input={"command": f"echo {done}", "description": "Echo"})


BARE = str(Path(__file__).with_name("bare_loop.py"))


def tool_gaps(provider: str, tool: str, calls: int, env_extra: dict[str, str],
              bare: bool = False) -> list[float]:
    """Run one `aimon -p` turn of `calls` calls of `tool`; return the gaps between requests.

    `bare`: run the bare-SDK loop (`bare_loop.py`) instead, with the same model: the floor.
    """
    arrivals: list[float] = []

    def respond(request: RecordedRequest) -> Reply:
        arrivals.append(time.perf_counter())
        done = len(request.tool_results())
        if done >= calls:
            return Reply(text="done")
        return Reply(tool_calls=(_gap_call(tool, done),))

    with LoopbackModelServer(respond) as server, tempfile.TemporaryDirectory() as cwd, \
            tempfile.TemporaryDirectory() as home:
        for i in range(7):
            Path(cwd, f"doc{i}.md").write_text("# doc\n")
        env = {**provider_env(provider, server), "AIMON_HOME": home, **env_extra}
        args = [AIMON, "--provider", provider, "--model", MODELS[provider], "-p", "go",
                "--max-iterations", str(calls + 5), "--allowed-tools", "Bash"]
        if bare:
            args = [sys.executable, BARE, provider, str(calls + 5)]
        done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True,
                              check=False)
        if done.returncode != 0 or len(arrivals) != calls + 1:
            raise SystemExit(f"aimon failed ({done.returncode}): {done.stderr}")
        results = server.requests[-1].tool_results().values()
        expected = {"Glob": ".md", "Read": "# doc", "Bash": ""}[tool]
        if len(results) != calls or not all(expected in text and "rror" not in text
                                            for text in results):
            raise SystemExit(f"the {tool} calls did not all succeed: {list(results)}")
    return [b - a for a, b in itertools.pairwise(arrivals)]


def gaps(runs: int, calls: int, before: str | None, tools: list[str],
         providers: list[str], after: str | None = None, bare: bool = False) -> None:
    variants: list[tuple[str, dict[str, str]]] = [("after", {"PYTHONPATH": after} if after
                                                   else {})]
    variants += [("before", {"PYTHONPATH": before})] if before else []
    variants += [("bare SDK", {})] if bare else []
    rows: dict[tuple[str, str, str], tuple[list[float], list[float]]] = {}
    for _ in range(runs):  # interleaved: after, before, after, before ...
        for provider, tool in itertools.product(providers, tools):
            for name, extra in variants:
                if name == "bare SDK" and tool == "Glob":
                    continue  # the bare loop has Read and Bash only
                found = tool_gaps(provider, tool, calls, extra, bare=name == "bare SDK")
                first, steady = rows.setdefault((provider, tool, name), ([], []))
                first.append(found[0])
                steady.append(statistics.median(found[1:]))
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| provider | tool | code | first iteration | steady iteration (median) | runs |")
    print("|---|---|---|---|---|---|")
    for (provider, tool, name), (first, steady) in rows.items():
        print(f"| {provider} | {tool} | {name} | {statistics.median(first) * 1000:.1f} ms "
              f"(min {min(first) * 1000:.1f}) | {statistics.median(steady) * 1000:.2f} ms "
              f"(min {min(steady) * 1000:.2f}) | {len(first)} |")


# --- resume and send a 10,000-message session ----------------------------------------------


def make_resumable(env: dict[str, str], project: Path, size: int) -> str:
    """Start a session with `aimon -p`, then append `size` messages to it; return its id.

    The messages have bench_sessions' shapes (prompts, Read calls, 40-line results, answers).
    """
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_sessions import conversation

    from aimon_core.session import FileSessionRecordStore

    done = subprocess.run([AIMON, "--model", MODELS["anthropic"], "-p", "start",
                           "--output-format", "json"], env=env, cwd=project, capture_output=True,
                          text=True, check=True)
    session_id = str(json.loads(done.stdout)["session_id"])
    records = FileSessionRecordStore(Path(env["AIMON_HOME"]) / "data")
    messages = conversation(size)
    for start in range(0, size, 500):
        records.append(session_id, messages[start:start + 500])  # type: ignore[arg-type]
    return session_id


def _cpu_of(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """Run one command; return the CPU seconds (user + system) its process used."""
    return _timed(args, env, cwd)[1]


_FLOOR = """
import gc, json, sys, time
gc.disable()  # as aimon holds the collector while it opens a session
data = open(sys.argv[1], "rb").read()
decoded = json.loads(open(sys.argv[2], "rb").read())
started = time.process_time()
for line in data.decode().split("\\n")[:-1]:
    json.loads(line)
json.dumps(decoded, ensure_ascii=False, separators=(",", ":"))
print(time.process_time() - started)
"""


def json_floor(session_file: Path, body: bytes, runs: int) -> tuple[float, float]:
    """The JSON a resume must do: decode the session file's lines, encode the request body.

    CPU seconds, median of `runs`: timed in a fresh process each time (as `aimon` does it:
    its first time, memory new from the system), and in this warm one.
    """
    decoded = json.loads(body)
    warm = []
    lines = session_file.read_bytes().decode().split("\n")[:-1]
    for _ in range(runs):
        started = time.process_time()
        for line in lines:
            json.loads(line)
        json.dumps(decoded, ensure_ascii=False, separators=(",", ":"))
        warm.append(time.process_time() - started)
    with tempfile.NamedTemporaryFile(suffix=".json") as saved:
        saved.write(body)
        saved.flush()
        fresh = [float(subprocess.run([sys.executable, "-c", _FLOOR, str(session_file),
                                       saved.name], capture_output=True, text=True,
                                      check=True).stdout) for _ in range(runs)]
    return statistics.median(fresh), statistics.median(warm)


PARTS = str(Path(__file__).with_name("resume_parts.py"))


def resume_parts(runs: int, before: str | None, provider: str = "anthropic",
                 after: str | None = None) -> None:
    """The parts of one `aimon -p -r` of a 10,000-message session, timed inside it (CPU)."""
    variants: list[tuple[str, dict[str, str]]] = [("after", {"PYTHONPATH": after} if after
                                                   else {})]
    variants += [("before", {"PYTHONPATH": before})] if before else []
    times: dict[str, dict[str, list[float]]] = {name: {} for name, _ in variants}
    with tempfile.TemporaryDirectory() as base:
        project = make_project(Path(base))
        with LoopbackModelServer(lambda request: Reply(text="ok")) as server:
            home = {"AIMON_HOME": str(Path(base, "home"))}
            session_id = make_resumable({**provider_env("anthropic", server), **home}, project,
                                        10_000)
            env = {**provider_env(provider, server), **home}
            args = [sys.executable, PARTS, *_resume_args(provider), session_id]
            for _ in range(runs):
                for name, env_extra in variants:
                    done = subprocess.run(args, env={**env, **env_extra}, cwd=project,
                                          capture_output=True, text=True, check=True)
                    line = next(x for x in done.stderr.splitlines()
                                if x.startswith("resume-parts "))
                    for part, ms in json.loads(line.removeprefix("resume-parts ")).items():
                        times[name].setdefault(part, []).append(ms)
    names = [name for name, _ in variants]
    print(f"| part (10,000 messages, CPU, median of {runs}) | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for part in ("load", "turn_history", "estimate", "encode"):
        cells = [f"{statistics.median(times[n][part]):.1f} ms" if part in times[n] else "—"
                 for n in names]
        print(f"| {part} | " + " | ".join(cells) + " |")


def _resume_args(provider: str) -> list[str]:
    return ["--provider", provider, "--model", MODELS[provider], "-p", "go on", "-r"]


def resume(runs: int, before: str | None, provider: str = "anthropic",
           after: str | None = None) -> None:
    """CPU of `aimon -p -r` on a 10,000-message session over a 10-message one, in pairs.

    The sessions are written through the Anthropic wire; `provider` resumes them.
    """
    variants: list[tuple[str, dict[str, str]]] = [("after", {"PYTHONPATH": after} if after
                                                   else {})]
    variants += [("before", {"PYTHONPATH": before})] if before else []
    with tempfile.TemporaryDirectory() as base:
        project = make_project(Path(base))
        with LoopbackModelServer(lambda request: Reply(text="ok")) as server:
            home = {"AIMON_HOME": str(Path(base, "home"))}
            ids = {size: make_resumable({**provider_env("anthropic", server), **home}, project,
                                        size) for size in (10, 10_000)}
            env = {**provider_env(provider, server), **home}
            extra: dict[str, list[float]] = {name: [] for name, _ in variants}
            cpus: dict[tuple[str, int], list[float]] = {}
            walls: dict[tuple[str, int], list[float]] = {}
            for run in range(runs + 1):
                for name, env_extra in variants:
                    cpu = {}
                    for size, session_id in ids.items():
                        args = [AIMON, *_resume_args(provider), session_id]
                        started = time.perf_counter()
                        cpu[size] = _cpu_of(args, {**env, **env_extra}, project)
                        walls.setdefault((name, size), []).append(time.perf_counter() - started)
                    if run:  # the first round warms the caches
                        extra[name].append(cpu[10_000] - cpu[10])
                        for size, used in cpu.items():
                            cpus.setdefault((name, size), []).append(used)
            body = json.dumps(server.requests[-1].body).encode()
            session_file = next(Path(base, "home").rglob(f"{ids[10_000]}*.jsonl"))
            fresh, warm = json_floor(session_file, body, 5)
    # A process's CPU scatters upward (the SDK's import alone by ~100 ms), so the least CPU of
    # each size over the runs is the steadier floor: its difference is given too.
    print(f"| code | 10,000 over 10 messages: CPU (median of {runs} pairs, min–max) "
          "| least CPU of each size, difference | CPU 10 / 10,000 (median) "
          "| wall 10 / 10,000 (median) |")
    print("|---|---|---|---|---|")
    for name, _ in variants:
        least = min(cpus[name, 10_000]) - min(cpus[name, 10])
        print(f"| {name} | **+{statistics.median(extra[name]) * 1000:.0f} ms** "
              f"({min(extra[name]) * 1000:.0f}–{max(extra[name]) * 1000:.0f}) "
              f"| +{least * 1000:.0f} ms "
              f"| {statistics.median(cpus[name, 10]) * 1000:.0f} / "
              f"{statistics.median(cpus[name, 10_000]) * 1000:.0f} ms "
              f"| {statistics.median(walls[name, 10]) * 1000:.0f} / "
              f"{statistics.median(walls[name, 10_000]) * 1000:.0f} ms |")
    print(f"\nits JSON (decode the session file's lines, encode the {len(body) / 1e6:.1f} MB "
          f"body): {fresh * 1000:.0f} ms in a fresh process, {warm * 1000:.0f} ms warm")


# --- warm print mode: the service runs the turn ---------------------------------------------


def _timed(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Run one command; return (wall, CPU of its process and children) in seconds."""
    started = time.perf_counter()
    with subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE) as child:
        assert child.stderr is not None
        err = child.stderr.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{args[0]} failed: {err.decode(errors='replace')}")
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime


def _service_cpu(pid: int) -> float:
    """Return the CPU seconds a running process has used (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def warm(runs: int, provider: str, idle_seconds: float) -> None:
    """`aimon -p` on the four-call fix with the service running, without, and the bare loop.

    Interleaved (bare, warm, cold) `runs` times; wall and CPU of the client process (its
    children too), medians; the service's own CPU per warm run; then its memory, and the CPU
    it uses idle for `idle_seconds`.
    """
    with tempfile.TemporaryDirectory() as base, \
            LoopbackModelServer(fix4_responder(make_project(Path(base)))) as server:
        project = Path(base, "proj")
        env = {**provider_env(provider, server), "AIMON_HOME": str(Path(base, "home"))}
        read_end, write_end = os.pipe()
        serve = subprocess.Popen([AIMON, "serve", "--idle-minutes", "0", "--ready-fd",
                                  str(write_end)], env=env, pass_fds=(write_end,),
                                 stderr=subprocess.DEVNULL)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as ready:
            assert ready.read() == b"ready\n", "the service did not start"
        variants = {"bare SDK loop": ([sys.executable, BARE, provider], env),
                    "aimon -p, warm (service)": (aimon_args(provider), env),
                    "aimon -p, cold": (aimon_args(provider), {**env, "AIMON_NO_SERVICE": "1"})}
        _timed(aimon_args(provider), env, project)  # the service builds its runtime once
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        service_cpu: list[float] = []
        for _ in range(runs):
            for name, (args, run_env) in variants.items():
                before = _service_cpu(serve.pid)
                times[name].append(_timed(args, run_env, project))
                if "warm" in name:
                    service_cpu.append(_service_cpu(serve.pid) - before)
        status = json.loads(subprocess.run([AIMON, "serve", "--status"], env=env,
                                           capture_output=True, text=True, check=True).stdout)
        idle_from = _service_cpu(serve.pid)
        time.sleep(idle_seconds)
        idle_cpu = _service_cpu(serve.pid) - idle_from
        subprocess.run([AIMON, "serve", "--stop"], env=env, capture_output=True, check=True)
        serve.wait()
    bare = statistics.median(wall for wall, _ in times["bare SDK loop"])
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {provider}; "
          f"median of {runs}")
    print("| run | wall | x bare loop | CPU of the client process |")
    print("|---|---|---|---|")
    for name, pairs in times.items():
        wall = statistics.median(w for w, _ in pairs)
        cpu = statistics.median(c for _, c in pairs)
        print(f"| {name} | {wall * 1000:.0f} ms | {wall / bare:.2f} | {cpu * 1000:.0f} ms |")
    print(f"\nthe service's CPU per warm run: {statistics.median(service_cpu) * 1000:.0f} ms "
          f"(median); its peak memory {status['max_rss_kb'] / 1024:.0f} MiB; idle for "
          f"{idle_seconds:.0f} s it used {idle_cpu * 1000:.0f} ms of CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    serve_parser = sub.add_parser("serve")
    serve_parser.add_argument("--latency", type=float, default=0.0,
                              help="seconds the model waits before each answer (default 0)")
    gaps_parser = sub.add_parser("gaps")
    gaps_parser.add_argument("--runs", type=int, default=5)
    gaps_parser.add_argument("--calls", type=int, default=20)
    gaps_parser.add_argument("--before", help="a source tree to compare (run via PYTHONPATH)")
    gaps_parser.add_argument("--after", help="a source tree to run as 'after' (default: this)")
    gaps_parser.add_argument("--bare", action="store_true",
                             help="also time the bare-SDK loop (bare_loop.py): the floor")
    gaps_parser.add_argument("--tools", default=",".join(GAP_TOOLS),
                             help=f"comma-separated, of {', '.join(GAP_TOOLS)}")
    gaps_parser.add_argument("--providers", default=",".join(MODELS),
                             help=f"comma-separated, of {', '.join(MODELS)}")
    resume_parser = sub.add_parser("resume")
    resume_parser.add_argument("--runs", type=int, default=5)
    resume_parser.add_argument("--before", help="a source tree to compare (run via PYTHONPATH)")
    resume_parser.add_argument("--after", help="a source tree to run as 'after' (default: this)")
    resume_parser.add_argument("--parts", action="store_true",
                               help="time the parts inside the process instead (resume_parts.py)")
    resume_parser.add_argument("--provider", choices=list(MODELS), default="anthropic",
                               help="the wire the sessions are resumed on")
    warm_parser = sub.add_parser("warm")
    warm_parser.add_argument("--runs", type=int, default=10)
    warm_parser.add_argument("--provider", choices=list(MODELS), default="anthropic")
    warm_parser.add_argument("--idle", type=float, default=30.0,
                             help="seconds the idle service's CPU is measured for")
    args = parser.parse_args()
    match args.what:
        case "serve":
            serve(args.latency)
        case "warm":
            warm(args.runs, args.provider, args.idle)
        case "resume" if args.parts:
            resume_parts(args.runs, args.before, args.provider, args.after)
        case "resume":
            resume(args.runs, args.before, args.provider, args.after)
        case _:
            gaps(args.runs, args.calls, args.before, args.tools.split(","),
                 args.providers.split(","), args.after, args.bare)


if __name__ == "__main__":
    main()
