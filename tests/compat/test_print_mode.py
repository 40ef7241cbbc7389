"""End to end: `aimon -p` in a Claude Code project, `.claude/settings.json` its only config.

The hook scripts (tests/compat/hooks) follow the patterns of real Claude Code hooks: a jq Stop
hook reading `transcript_path`, a guard reading `tool_response.stdout`, a SessionStart hook
writing `CLAUDE_ENV_FILE`, an async logger.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from aimon_core.config import TrustStore, load_settings
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

MakeProject = Callable[[dict[str, Any]], Path]


def hook(script: str, **fields: Any) -> dict[str, Any]:
    """Return a hook entry running one of the scripts the way Claude Code projects do."""
    return {"type": "command", "command": f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{script}',
            **fields}


AIMON = str(Path(sys.executable).with_name("aimon"))
SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "statusLine": {"type": "command", "command": "echo aimon"},
    "enabledPlugins": {"formatter@anthropic-tools": True},
    "permissions": {"allow": ["Bash(printenv:*)", "Bash(echo:*)"]},
    "hooks": {
        "SessionStart": [{"matcher": "startup", "hooks": [hook("session_env.sh")]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [
            hook("guard_secrets.sh", statusMessage="Checking output for secrets"),
            hook("async_logger.sh", **{"async": True})]}],
        "Stop": [{"hooks": [hook("stop_requires_done.sh")]}],
    },
}


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer() as srv:
        yield srv


def run_aimon(server: LoopbackModelServer, cwd: Path, *args: str
              ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.base_url,
               AIMON_NO_LOCAL_PROBE="1")
    return subprocess.run([AIMON, "--model", "claude-sonnet-4-5", "-p", "go", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=90, check=False)


def texts(server: LoopbackModelServer, index: int) -> str:
    """Every text of request `index` (prompt, tool results, reminders), joined."""
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            if isinstance(value.get("text"), str):
                out.append(value["text"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and value:
            out.append(value)

    walk(server.requests[index].body["messages"])
    return "\n".join(out)


def claude_transcripts() -> list[Path]:
    return sorted(Path(os.environ["AIMON_HOME"]).rglob("*.claude.jsonl"))


def session_replies() -> tuple[Reply, ...]:
    command = "printenv GREETING && echo SECRET-123"
    return (Reply(tool_calls=(ScriptedToolCall(name="Bash", input={"command": command}),),
                  input_tokens=120, output_tokens=11, cache_read_tokens=40),
            Reply(text="All set.", input_tokens=200, output_tokens=7),
            Reply(text="All set. DONE", input_tokens=230, output_tokens=9,
                  cache_write_tokens=16))


def test_a_claude_code_project_runs_unchanged(make_project: MakeProject,
                                             server: LoopbackModelServer) -> None:
    project = make_project(SETTINGS)
    server.add(*session_replies())
    done = run_aimon(server, project)
    assert done.returncode == 0, done.stderr
    # The notice naming the Claude Code file and the keys aimon does not use is the REPL's
    # at start-up; a script's every `aimon -p` stays quiet (issue 26, p11).
    assert "read Claude Code settings" not in done.stderr
    # SessionStart: plain stdout is context; CLAUDE_ENV_FILE's export reaches Bash.
    assert "Project conventions: run tests with make test." in texts(server, 0)
    after_bash = texts(server, 1)
    assert "hello from CLAUDE_ENV_FILE" in after_bash
    # The guard read tool_response.stdout and blocked: its reason reached the model.
    assert "The command printed a secret; do not repeat it." in after_bash
    # The jq Stop hook read the Claude Code-shaped transcript and asked for DONE once.
    assert "end your answer with DONE" in texts(server, 2)
    assert len(server.requests) == 3
    assert done.stdout.strip() == "All set. DONE"
    # The async logger ran, and finished before aimon exited.
    logged = [json.loads(line) for line in
              (project / "tool-log.jsonl").read_text().splitlines()]
    assert [entry["tool"] for entry in logged] == ["Bash"]


def test_the_transcript_has_claude_codes_shape(make_project: MakeProject,
                                               server: LoopbackModelServer) -> None:
    project = make_project(SETTINGS)
    server.add(*session_replies())
    assert run_aimon(server, project).returncode == 0
    [path] = claude_transcripts()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["user", "assistant", "user", "assistant",
                                                "user", "assistant"]
    assert lines[0]["parentUuid"] is None
    for before, line in itertools.pairwise(lines):
        assert line["parentUuid"] == before["uuid"]
    session_ids = {line["sessionId"] for line in lines}
    assert len(session_ids) == 1 and path.name == f"{session_ids.pop()}.claude.jsonl"
    assistant = [line["message"] for line in lines if line["type"] == "assistant"]
    assert assistant[0]["content"][0]["type"] == "tool_use"
    assert assistant[0]["usage"] == {"input_tokens": 120, "cache_creation_input_tokens": 0,
                                     "cache_read_input_tokens": 40, "output_tokens": 11}
    assert {message["model"] for message in assistant} == {"claude-sonnet-4-5"}
    assert all(line["cwd"] == str(project.resolve()) for line in lines)


def _ccusage() -> str | None:
    folder = Path(os.environ.get("AIMON_CCUSAGE_NPM")
                  or Path.home() / ".cache" / "aimon-ci" / "ccusage")
    found = folder / "node_modules" / ".bin" / "ccusage"
    return str(found) if found.exists() and shutil.which("node") else None


@pytest.mark.skipif(_ccusage() is None, reason="ccusage is not installed: .ci/run installs it "
                    "with npm into $AIMON_CCUSAGE_NPM (tests never reach the network)")
def test_ccusage_reports_an_aimon_sessions_tokens(make_project: MakeProject,
                                                   server: LoopbackModelServer,
                                                   tmp_path: Path) -> None:
    project = make_project(SETTINGS)
    server.add(*session_replies())
    assert run_aimon(server, project).returncode == 0
    [path] = claude_transcripts()
    # ccusage reads $CLAUDE_CONFIG_DIR/projects/<project>/<session>.jsonl.
    config = tmp_path / "claude-config"
    (config / "projects" / "proj").mkdir(parents=True)
    shutil.copy(path, config / "projects" / "proj" / path.name.replace(".claude", ""))
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config)}
    ccusage = _ccusage()
    assert ccusage is not None
    done = subprocess.run([ccusage, "session", "--json", "--offline"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["totals"]["inputTokens"] == 120 + 200 + 230
    assert report["totals"]["outputTokens"] == 11 + 7 + 9
    assert report["totals"]["cacheReadTokens"] == 40
    assert report["totals"]["cacheCreationTokens"] == 16
    assert len(report["sessions"]) == 1


EXAMPLE = Path(__file__).parents[2] / ".aimon.example" / "claude-project"


def test_the_example_claude_project_runs_quietly(tmp_path: Path,
                                                 server: LoopbackModelServer) -> None:
    project = tmp_path / "example"
    shutil.copytree(EXAMPLE, project)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    loaded = load_settings(project, trust_store=TrustStore())
    assert loaded.pending_trust is not None
    # The trust prompt counts the five hooks that will run, and nothing else.
    assert loaded.pending_trust.what[0].startswith("adds 5 hooks (SessionStart: ")
    TrustStore().trust(project, loaded.pending_trust.items)
    server.add(Reply(text="Looks good."))
    done = run_aimon(server, project)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the settings-read notice is the REPL's (issue 26, p11)
    assert done.stdout.strip() == "Looks good."
    first = server.requests[0].body["messages"][0]
    assert "never force-push" in json.dumps(first)  # CLAUDE.md, a context block
    assert "Branch:" in texts(server, 0)  # the SessionStart hook's context
