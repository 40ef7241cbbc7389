"""End to end: the real `aimon workflow` against a loopback model server (the OpenAI wire).

The server answers each request by the task prompt it carries; a responder thread may hold a
request until another has arrived, or until the test has killed `aimon`.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aimon_core.testing import (
    LoopbackModelServer,
    RecordedRequest,
    Reply,
    ScriptedToolCall,
    Step,
)
from tests.e2e.conftest import AIMON, MODEL_ARGS, aimon_env
from tests.workflow.conftest import make_project

WAIT = 30.0
env_for = aimon_env


def aimon(server: LoopbackModelServer, cwd: Path, *args: str, timeout: float = 60
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AIMON, *args], cwd=cwd, env=env_for(server), capture_output=True,
                          text=True, timeout=timeout, check=False)


def prompt_of(request: RecordedRequest) -> str:
    """Return the task prompt: the first user message of the conversation."""
    return next(text for role, text in request.conversation() if role == "user")


def routed(routes: dict[str, Callable[[RecordedRequest], Step]]
           ) -> Callable[[RecordedRequest], Step]:
    def respond(request: RecordedRequest) -> Step:
        prompt = prompt_of(request)
        for marker, route in routes.items():
            if marker in prompt:
                return route(request)
        raise AssertionError(f"no route for {prompt!r}")

    return respond


def runs(server: LoopbackModelServer, cwd: Path) -> list[dict[str, Any]]:
    done = aimon(server, cwd, "workflow", "runs", "--json")
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout))


def test_a_stages_tasks_reach_the_model_together_and_the_report_gets_both(
        tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    both = threading.Barrier(2, timeout=WAIT)

    def explore(answer: str) -> Callable[[RecordedRequest], Step]:
        def answer_when_both_asked(request: RecordedRequest) -> Step:
            both.wait()  # neither is answered before the server has seen both
            return Reply(text=answer)
        return answer_when_both_asked

    responder = routed({
        "List the functions": explore("add(a, b) in calc.py"),
        "List the tests": explore("one assert in test_calc.py"),
        "Summarise": lambda request: Reply(text=f"REPORT <{prompt_of(request)}>"),
    })
    with LoopbackModelServer(responder, provider="openai") as server:
        done = aimon(server, root, "workflow", "run", "survey", *MODEL_ARGS)
        assert done.returncode == 0, done.stderr
        assert done.stdout == ("REPORT <Summarise: add(a, b) in calc.py / one assert in "
                               "test_calc.py>\n")
        assert not both.broken
        assert "✓ report/0 (general-purpose) completed" in done.stderr
        listed = runs(server, root)
        assert [(r["workflow"], r["state"], r["completed"]) for r in listed] == [
            ("survey", "completed", 3)]
        shown = aimon(server, root, "workflow", "show", listed[0]["id"][-6:], "--json")
        record = json.loads(shown.stdout)
        assert record["state"] == "completed" and record["running_now"] is False
        assert [len(s["tasks"]) for s in record["stages"]] == [2, 1]
        assert record["stages"][1]["tasks"][0]["transcript"][0]["role"] == "user"
    assert len(server.requests) == 3


def test_resume_after_kill_9_runs_only_what_did_not_finish(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    reached = threading.Event()
    release = threading.Event()

    def hang(request: RecordedRequest) -> Step:
        reached.set()
        release.wait(WAIT)
        return Reply(text="too late")

    first = routed({"List the functions": lambda r: Reply(text="FUNCS"),
                    "List the tests": lambda r: Reply(text="TESTS"), "Summarise": hang})
    with LoopbackModelServer(first, provider="openai") as server:
        proc = subprocess.Popen([AIMON, "workflow", "run", "survey", *MODEL_ARGS], cwd=root,
                                env=env_for(server), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert reached.wait(WAIT), "the report task never reached the model"
            proc.kill()  # kill -9: no chance to record anything more
            proc.wait(WAIT)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        _, stderr = proc.communicate()
        assert proc.returncode == -signal.SIGKILL
        run_id = stderr.split("workflow survey run ", 1)[1].split(":", 1)[0]  # its first line
        shown = json.loads(aimon(server, root, "workflow", "show", run_id, "--json").stdout)
        assert shown["state"] == "running" and shown["running_now"] is False
        states = [[t["state"] for t in s["tasks"]] for s in shown["stages"]]
        assert states == [["completed", "completed"], ["running"]]
        text = aimon(server, root, "workflow", "show", run_id).stdout
        assert "interrupted (no process runs it; resume it)" in text

    second = routed({"Summarise": lambda r: Reply(text=f"REPORT <{prompt_of(r)}>")})
    with LoopbackModelServer(second, provider="openai") as server:
        done = aimon(server, root, "workflow", "resume", run_id[-6:], "--output-format",
                     "json", *MODEL_ARGS)
        assert done.returncode == 0, done.stderr
        again = json.loads(done.stdout)  # the run record
        assert again["id"] == run_id and again["state"] == "completed"
        assert again["output"] == "REPORT <Summarise: FUNCS / TESTS>"
        assert [prompt_of(r)[:9] for r in server.requests] == ["Summarise"]  # only that one
        assert again["stages"][0]["tasks"][0]["output"] == "FUNCS"


def test_ctrl_c_stops_every_task_and_the_run_stays_resumable(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    arrived = threading.Barrier(3, timeout=WAIT)  # both tasks and the test
    release = threading.Event()

    def hold(request: RecordedRequest) -> Step:
        arrived.wait()
        release.wait(WAIT)
        return Reply(text="late")

    with LoopbackModelServer(routed({"List": hold}), provider="openai") as server:
        proc = subprocess.Popen([AIMON, "workflow", "run", "survey", *MODEL_ARGS], cwd=root,
                                env=env_for(server), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            arrived.wait()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=WAIT)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 130, err
        (run,) = runs(server, root)
        assert f"interrupted: every task was stopped (resume it: aimon workflow resume " \
               f"{run['id']})" in err
        shown = json.loads(aimon(server, root, "workflow", "show", run["id"], "--json").stdout)
        assert shown["state"] == "interrupted"
        assert [t["state"] for t in shown["stages"][0]["tasks"]] == ["stopped", "stopped"]


def test_print_mode_refuses_what_would_ask_and_says_which_flag_allows_it(
        tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"touchy": """\
name: touchy
stages:
  - name: one
    tasks:
      - {agent: general-purpose, prompt: "TOUCH a file"}
"""})
    steps = [Reply(tool_calls=(ScriptedToolCall(name="Bash", input={"command": "touch x"}),)),
             Reply(text="could not touch it")]
    with LoopbackModelServer(routed({"TOUCH": lambda r: steps.pop(0)}),
                             provider="openai") as server:
        done = aimon(server, root, "workflow", "run", "touchy", *MODEL_ARGS, "--output-format",
                     "json")
    assert done.returncode == 0, done.stderr
    assert not (root / "x").exists()
    assert "1 tool call needed approval, which print mode cannot ask for" in done.stderr
    assert "--allowed-tools 'Bash(touch x)'" in done.stderr
    record = json.loads(done.stdout)
    assert record["output"] == "could not touch it"
    assert [d["tool_name"] for d in record["permission_denials"]] == ["Bash"]


def test_slash_workflow_runs_in_print_mode(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    responder = routed({"List": lambda r: Reply(text="x"),
                        "Summarise": lambda r: Reply(text="the summary")})
    with LoopbackModelServer(responder, provider="openai") as server:
        done = aimon(server, root, *MODEL_ARGS, "-p", "/workflow survey")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("the summary")
    assert "survey  completed  (3 of 3 tasks completed" in done.stdout
    # Progress on stderr, as `aimon workflow run` tells it.
    assert "aimon: ● explore/0 (explore) running\n" in done.stderr
    assert "aimon: ✓ report/0 (general-purpose) completed" in done.stderr
    assert done.stderr.rstrip().endswith(": completed")


def test_stream_json_has_a_line_per_workflow_change(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    responder = routed({"List": lambda r: Reply(text="x"),
                        "Summarise": lambda r: Reply(text="s")})
    with LoopbackModelServer(responder, provider="openai") as server:
        done = aimon(server, root, *MODEL_ARGS, "-p", "/workflow survey", "--output-format",
                     "stream-json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    runs_told = [(x["state"]) for x in lines if x["type"] == "workflow_run"]
    assert runs_told == ["running", "completed"]
    finished = [(x["label"], x["agent"]) for x in lines
                if x["type"] == "workflow_task" and x["state"] == "completed"]
    assert sorted(finished) == [("explore/0", "explore"), ("explore/1", "explore"),
                                ("report/0", "general-purpose")]
