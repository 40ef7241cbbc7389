"""Benchmark skill and subagent loading: 60 skills and 60 agents installed in a temp project.

Run:  .venv/bin/python bench/bench_extensions.py [--runs N] [--corpora DIR] [--first-prompt]
Prints a Markdown table. Not a test: numbers depend on the machine; see docs/PERFORMANCE.md.
The files are the real ones from ../shared/corpora when present (their sizes and YAML quirks),
repeated to reach 60 each; otherwise generated. Target: the first prompt pays < 20 ms for it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aimon_core.skill import (
    RenderContext,
    SkillRoots,
    load_skills,
    materialize_bundle,
    render_skill,
)
from aimon_core.subagent import AgentRoots, load_agents

COUNT = 60
COLD = """
import time, sys
from pathlib import Path
started, cpu_started = time.perf_counter(), time.process_time()
from aimon_core.agent import load_builtin_agent
load_builtin_agent("default")
base, cpu_base = time.perf_counter(), time.process_time()
from aimon_core.skill import SkillRoots, load_skills
from aimon_core.subagent import AgentRoots, load_agents
root = Path(sys.argv[1])
skills = load_skills(SkillRoots(project_root=root, user_dir=None))
agents = load_agents(AgentRoots(project_root=root, user_dir=None))
done, cpu_done = time.perf_counter(), time.process_time()
assert len(skills.names()) >= 60 and len(agents.names()) >= 60, (skills.names(), agents.names())
print(base - started, done - base, cpu_base - cpu_started, cpu_done - cpu_base)
"""


def populate(project: Path, corpora: Path) -> None:
    """Install 60 skills in .aimon/skills and 60 agents in .aimon/agents."""
    skills = sorted(corpora.glob("skills/*/*/SKILL.md"))
    agents = sorted(p for p in corpora.glob("agents/**/*.md") if p.name[0].islower())
    for i in range(COUNT):
        folder = project / ".aimon" / "skills" / f"skill-{i:02d}"
        folder.mkdir(parents=True)
        text = skills[i % len(skills)].read_text() if skills else (
            f"---\nname: skill-{i:02d}\ndescription: Generated skill {i}. Use when asked.\n"
            "allowed-tools: Read Grep Bash(git:*)\n---\n" + "Do the thing carefully.\n" * 80)
        # Unique names: the copied files reuse upstream names.
        (folder / "SKILL.md").write_text(text.replace("\nname: ", f"\nname: n{i:02d}-", 1))
        agent_text = agents[i % len(agents)].read_text() if agents else (
            f"---\nname: agent-{i:02d}\ndescription: Generated agent {i}\n"
            "tools: Read, Grep, Glob\nmodel: sonnet\n---\n" + "You are an expert.\n" * 60)
        agent_file = project / ".aimon" / "agents" / f"agent-{i:02d}.md"
        agent_file.parent.mkdir(parents=True, exist_ok=True)
        agent_file.write_text(agent_text.replace("\nname: ", f"\nname: n{i:02d}-", 1))


def timed(fn: Callable[[], object], runs: int, clock: Callable[[], float] = time.perf_counter
          ) -> list[float]:
    times = []
    for _ in range(runs):
        started = clock()
        fn()
        times.append(clock() - started)
    return times


def row(what: str, seconds: list[float], target: str = "") -> str:
    median, low = statistics.median(seconds) * 1e3, min(seconds) * 1e3
    return f"| {what} | {median:.1f} ms (min {low:.1f}) | {target} |"


def first_prompt(project: Path, runs: int) -> tuple[list[float], list[float]]:
    """Return, for aimon started in `project`: the time until a key typed at the REPL's first
    prompt shows (bench_sessions.py's method), and the wall time of `aimon -p hi` answered by
    the loopback model (loading skills and agents sits on that path, before the model call)."""
    import pexpect

    from aimon_core.testing import LoopbackModelServer, Reply

    aimon = str(Path(sys.executable).with_name("aimon"))
    echoed, printed = [], []
    with tempfile.TemporaryDirectory() as home, LoopbackModelServer() as server:
        env = {**os.environ, "AIMON_HOME": home, "ANTHROPIC_API_KEY": "bench",
               "ANTHROPIC_BASE_URL": server.base_url, "PROMPT_TOOLKIT_NO_CPR": "1",
               "TERM": "xterm", "AIMON_NO_LOCAL_PROBE": "1"}
        for _ in range(runs):
            started = time.perf_counter()
            child = pexpect.spawn(aimon, [], cwd=str(project), env=env, dimensions=(40, 120),
                                  encoding="utf-8", timeout=30)
            child.expect_exact("›")
            child.send("zq")
            child.expect_exact("zq")
            echoed.append(time.perf_counter() - started)
            child.sendcontrol("u")
            child.sendcontrol("d")
            child.expect(pexpect.EOF)
            child.close()
            server.add(Reply(text="ok"))
            started = time.perf_counter()
            subprocess.run([aimon, "--model", "claude-sonnet-4-5", "-p", "hi"], cwd=project,
                           env=env, check=True, capture_output=True)
            printed.append(time.perf_counter() - started)
    return echoed, printed


def print_first_prompt(corpora: Path, runs: int) -> None:
    """Print the first-prompt rows: 60 skills + 60 agents installed, against none."""
    with tempfile.TemporaryDirectory() as empty, tempfile.TemporaryDirectory() as full:
        populate(Path(full), corpora)
        first_prompt(Path(full), 1)  # compile bytecode, copy the bundle once
        none_echo, none_print = first_prompt(Path(empty), runs)
        full_echo, full_print = first_prompt(Path(full), runs)
    print(f"\nFirst prompt, {runs} runs each (no extensions vs {COUNT} skills + {COUNT} agents)\n")
    print("| what | time | target |\n|---|---|---|")
    print(row("REPL: key echoed at the first prompt, no skills or agents", none_echo))
    print(row(f"REPL: the same, {COUNT} skills + {COUNT} agents", full_echo,
              f"+{(statistics.median(full_echo) - statistics.median(none_echo)) * 1e3:.1f} ms"))
    print(row("`aimon -p hi` (loopback model), no skills or agents", none_print))
    print(row(f"`aimon -p hi`, {COUNT} skills + {COUNT} agents", full_print,
              f"+{(statistics.median(full_print) - statistics.median(none_print)) * 1e3:.1f} ms"))


def main() -> None:
    """Print the benchmark table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--corpora", type=Path,
                        default=Path(__file__).resolve().parents[2] / "shared" / "corpora")
    parser.add_argument("--first-prompt", action="store_true",
                        help="Also time aimon's first prompt with and without 60 + 60 installed.")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        populate(project, options.corpora)
        cold_base, cold_load, cpu_base, cpu_load = [], [], [], []
        # Installed packages have their bytecode compiled; let the first run write it.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        for run in range(options.runs + 1):
            out = subprocess.run([sys.executable, "-c", COLD, str(project)], check=True,
                                 capture_output=True, text=True, env=env).stdout.split()
            if run == 0:
                continue
            cold_base.append(float(out[0]))
            cold_load.append(float(out[1]))
            cpu_base.append(float(out[2]))
            cpu_load.append(float(out[3]))
        skill_roots = SkillRoots(project_root=project, user_dir=None)
        agent_roots = AgentRoots(project_root=project, user_dir=None)
        warm_skills = timed(lambda: load_skills(skill_roots), options.runs)
        warm_agents = timed(lambda: load_agents(agent_roots), options.runs)
        cpu_skills = timed(lambda: load_skills(skill_roots), options.runs, time.process_time)
        cpu_agents = timed(lambda: load_agents(agent_roots), options.runs, time.process_time)
        materialize = timed(lambda: materialize_bundle(project), options.runs)
        registry = load_skills(SkillRoots(project_root=project, user_dir=None,
                                          bundled_dir=project / ".aimon" / "bundled-skills"))
        init = registry.get("init")
        assert init is not None
        ctx = RenderContext(agent_runtime_id="r", user="u", session_id="s")
        render = timed(lambda: render_skill(init, "focus on tests", ctx), options.runs)
        shutil.rmtree(project / ".aimon")
    print(f"{COUNT} skills + {COUNT} agents in the project layer, plus the built-in bundle; "
          f"{options.runs} runs\n")
    print("| what | time | target |\n|---|---|---|")
    print(row("first load, new process: 60 skills + 60 agents (after the default agent)",
              cold_load, "< 20 ms"))
    print(row("  same, CPU time of the process", cpu_load, "< 20 ms"))
    print(row("  (the default agent before it, incl. PyYAML import)", cold_base))
    print(row("  (the same, CPU time)", cpu_base))
    print(row("load 60 skills again, warm process", warm_skills))
    print(row("  same, CPU time", cpu_skills))
    print(row("load 60 agents again, warm process", warm_agents))
    print(row("  same, CPU time", cpu_agents))
    print(row("materialize the built-in bundle (.aimon/bundled-skills)", materialize))
    print(row("render a skill with a supporting file", render))
    if options.first_prompt:
        print_first_prompt(options.corpora, options.runs)


if __name__ == "__main__":
    main()
