"""Benchmark issue 13: `aimon -p` on a four-call fix against a bare-SDK loop, iteration costs.

Run:
  .venv/bin/python bench/bench_fix4.py serve                 # a loopback model server; prints
                                                             # its env, runs until Ctrl-C
  .venv/bin/python bench/bench_fix4.py bare --provider P     # the bare-SDK loop (env from serve)
  .venv/bin/python bench/bench_fix4.py gaps [--runs N] [--calls N]
                                                             # per-iteration and first-iteration
                                                             # cost, from request arrival times

`serve` writes a project folder (calc.py with a sign bug, test_calc.py) and prints the
environment and the commands to time; whole-process times are taken outside (e.g. with
`/usr/bin/time` or `hyperfine`, interleaving `aimon -p` and the bare loop). The fix is four
model calls: Read calc.py, Edit it, Bash `python3 test_calc.py`, answer. The server decides
each step from the request (how many tool results it holds, what Read returned), so every run
does the same work: the Edit flips the sign either way.

`gaps` runs `aimon -p` with a model that calls Glob N times, and takes the time between the
arrivals of consecutive requests at the server: an instant model, so a gap is exactly what
aimon spends on one iteration (stream end, tool, transcript, next request). The first gap is
the first iteration; the median of the rest is the steady cost.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall

AIMON = str(Path(sys.executable).with_name("aimon"))
MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4"}
BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\nprint('add(2, 3) =', add(2, 3))\n"
PROMPT = "add(2, 3) should be 5; fix calc.py and run test_calc.py"


def _results(request: RecordedRequest) -> list[str]:
    """Tool result texts in a request, oldest first (either wire format)."""
    out: list[str] = []
    for message in request.body.get("messages", []):
        if message.get("role") == "tool":
            out.append(str(message.get("content")))
        elif isinstance(message.get("content"), list):
            out += [json.dumps(b.get("content")) for b in message["content"]
                    if b.get("type") == "tool_result"]
    return out


def fix4_responder(project: Path) -> Callable[[RecordedRequest], Reply]:
    """The four-call fix, decided from each request: Read, Edit, Bash, answer."""
    calc = str(project / "calc.py")

    def respond(request: RecordedRequest) -> Reply:
        done = _results(request)
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


def serve() -> None:
    base = Path(tempfile.mkdtemp(prefix="aimon-fix4-"))
    project = make_project(base)
    with LoopbackModelServer(fix4_responder(project)) as server:
        print(f"# project: {project}  (AIMON_HOME={base / 'home'})")
        for provider in MODELS:
            env = provider_env(provider, server)
            keys = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL") if provider == "anthropic" \
                else ("OPENAI_API_KEY", "OPENAI_BASE_URL")
            pairs = " ".join(f"{k}={env[k]}" for k in keys)
            print(f"{provider}: cd {project} && env AIMON_HOME={base / 'home'} "
                  f"AIMON_NO_LOCAL_PROBE=1 {pairs} {' '.join(aimon_args(provider)[:-2])} "
                  f"'{PROMPT}' --allowed-tools 'Edit Bash'")
            print(f"{provider} bare: cd {project} && env {pairs} {sys.executable} "
                  f"{Path(__file__).resolve()} bare --provider {provider}")
        sys.stdout.flush()
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


# --- the bare-SDK loop: the same four calls and three tools, nothing else ------------------

_TOOLS = [
    {"name": "Read", "description": "Read a file.", "input_schema": {
        "type": "object", "properties": {"file_path": {"type": "string"}}}},
    {"name": "Edit", "description": "Replace text in a file.", "input_schema": {
        "type": "object", "properties": {"file_path": {"type": "string"},
                                         "old_string": {"type": "string"},
                                         "new_string": {"type": "string"}}}},
    {"name": "Bash", "description": "Run a command.", "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"}}}},
]


def _run_tool(name: str, args: dict[str, Any]) -> str:
    if name == "Read":
        return Path(args["file_path"]).read_text()
    if name == "Edit":
        path = Path(args["file_path"])
        path.write_text(path.read_text().replace(args["old_string"], args["new_string"], 1))
        return "edited"
    done = subprocess.run(["/bin/bash", "-c", args["command"]], capture_output=True, text=True,
                          check=False)
    return done.stdout + done.stderr


async def _bare_anthropic() -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for _ in range(8):
        async with client.messages.stream(model=MODELS["anthropic"], max_tokens=1024,
                                          messages=messages, tools=_TOOLS) as stream:  # type: ignore[arg-type]
            message = await stream.get_final_message()
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            break
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": _run_tool(b.name, b.input)}
            for b in uses]})
    await client.close()


async def _bare_openai() -> None:
    import openai

    client = openai.AsyncOpenAI(max_retries=0)
    tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                               "parameters": t["input_schema"]}} for t in _TOOLS]
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for _ in range(8):
        stream = await client.chat.completions.create(model=MODELS["openai"], messages=messages,  # type: ignore[arg-type]
                                                      tools=tools, stream=True)  # type: ignore[arg-type]
        calls: dict[int, dict[str, str]] = {}
        async for chunk in stream:
            if not chunk.choices:
                continue
            for call in chunk.choices[0].delta.tool_calls or ():
                entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["name"] = call.function.name or entry["name"]
                    entry["arguments"] += call.function.arguments or ""
        if not calls:
            break
        messages.append({"role": "assistant", "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]})
        messages += [{"role": "tool", "tool_call_id": c["id"],
                      "content": _run_tool(c["name"], json.loads(c["arguments"]))}
                     for c in calls.values()]
    await client.close()


def bare(provider: str) -> None:
    asyncio.run(_bare_anthropic() if provider == "anthropic" else _bare_openai())


# --- per-iteration and first-iteration cost ------------------------------------------------


def glob_gaps(provider: str, calls: int, env_extra: dict[str, str]) -> list[float]:
    """Run one `aimon -p` turn of `calls` Glob calls; return the gaps between requests (s)."""
    arrivals: list[float] = []

    def respond(request: RecordedRequest) -> Reply:
        arrivals.append(time.perf_counter())
        done = len(_results(request))
        if done >= calls:
            return Reply(text="done")
        return Reply(tool_calls=(ScriptedToolCall(name="Glob",
                                                  input={"pattern": f"*{done % 7}.md"}),))

    with LoopbackModelServer(respond) as server, tempfile.TemporaryDirectory() as cwd, \
            tempfile.TemporaryDirectory() as home:
        for i in range(7):
            Path(cwd, f"doc{i}.md").write_text("# doc\n")
        env = {**provider_env(provider, server), "AIMON_HOME": home, **env_extra}
        args = [AIMON, "--provider", provider, "--model", MODELS[provider], "-p", "go",
                "--max-iterations", str(calls + 5)]
        done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True,
                              check=False)
        if done.returncode != 0 or len(arrivals) != calls + 1:
            raise SystemExit(f"aimon failed ({done.returncode}): {done.stderr}")
    return [b - a for a, b in itertools.pairwise(arrivals)]


def gaps(runs: int, calls: int, before: str | None) -> None:
    variants = [("after", {})] + ([("before", {"PYTHONPATH": before})] if before else [])
    rows: dict[tuple[str, str], tuple[list[float], list[float]]] = {}
    for _ in range(runs):  # interleaved: after, before, after, before ...
        for provider in MODELS:
            for name, extra in variants:
                found = glob_gaps(provider, calls, extra)
                first, steady = rows.setdefault((provider, name), ([], []))
                first.append(found[0])
                steady.append(statistics.median(found[1:]))
    print("| provider | code | first iteration | steady iteration (median) | runs |")
    print("|---|---|---|---|---|")
    for (provider, name), (first, steady) in rows.items():
        print(f"| {provider} | {name} | {statistics.median(first) * 1000:.1f} ms "
              f"(min {min(first) * 1000:.1f}) | {statistics.median(steady) * 1000:.2f} ms "
              f"(min {min(steady) * 1000:.2f}) | {len(first)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("serve")
    bare_parser = sub.add_parser("bare")
    bare_parser.add_argument("--provider", choices=tuple(MODELS), default="anthropic")
    gaps_parser = sub.add_parser("gaps")
    gaps_parser.add_argument("--runs", type=int, default=5)
    gaps_parser.add_argument("--calls", type=int, default=20)
    gaps_parser.add_argument("--before", help="a source tree to compare (run via PYTHONPATH)")
    args = parser.parse_args()
    match args.what:
        case "serve":
            serve()
        case "bare":
            bare(args.provider)
        case _:
            gaps(args.runs, args.calls, args.before)


if __name__ == "__main__":
    main()
