"""Class 6: no credential reaches the model by any route (RELIABILITY.md 14), in any form.

aimon runs with a table of credentials in its environment, one per common form (provider
keys, cloud and service tokens, passwords, lower-case and camelCase names, a URL with a
password, a private key, a token under an ordinary name) next to control variables that are
no credentials. Each route into the model then tries to carry them there: Bash and background
jobs print their environment, settings `env` adds more, hooks put their whole environment
into every kind of answer, an MCP server echoes its own through tools, errors, descriptions
and resources (attached by `@server:uri` too), a custom command's `` !`env` ``, and a hostile
repository tries to get them into the first request before any tool runs.

Two walls are checked separately: what a process the model starts may see (its environment,
dumped to a file, must hold no credential but keep the controls), and what reaches the model,
the screen, stream-json and the files aimon writes (no credential anywhere).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from aimon_core.testing import Reply, Step

from ._attempts import (
    Attempt,
    Batch,
    NoSecret,
    Outcome,
    Ran,
    Refused,
    Workspace,
    bash,
    read,
    tool,
)
from .conftest import cases, check_attempt, make_repo, script

pytestmark = pytest.mark.timeout(600)

SUITE = "AimonSecretsSuite"
PASSWORD = f"pw-{SUITE}-5f4e3d"
PEM_LINE = f"b3BlbnNzaC1rZXktdjEAAAAA{SUITE}QmFzZTY0Qm9keUxpbmU"


def form(name: str, value: str, mark: str | None = None) -> tuple[str, str, str]:
    """Return (variable, value, what must never show: the value or the credential in it)."""
    return name, value, mark or value


# One credential per common form, each a distinct, recognisable value.
FORMS = (
    form("ANTHROPIC_API_KEY", f"sk-ant-api03-{SUITE}-anthropic-0a1b2c3d"),
    form("OPENAI_API_KEY", f"sk-proj-{SUITE}-openai-4e5f6a7b"),
    form("ANTHROPIC_AUTH_TOKEN", f"{SUITE}-anthropic-auth-8c9d0e1f"),
    form("GITHUB_TOKEN", f"ghp_{SUITE}Github0123456789"),
    form("GH_TOKEN", f"gho_{SUITE}GhCli0123456789ab"),
    form("AWS_ACCESS_KEY_ID", "AKIAAIMONSUITE2345"),
    form("AWS_SECRET_ACCESS_KEY", f"{SUITE}/aws+Secret/0123456789abcdef"),
    form("AWS_SESSION_TOKEN", f"FwoGZXIvYXdzE{SUITE}SessionTokenXYZ"),
    form("GOOGLE_APPLICATION_CREDENTIALS", f"/srv/keys/{SUITE}-gcp-service-account.json"),
    form("AZURE_CLIENT_SECRET", f"{SUITE}~azure~client~secret~42"),
    form("HF_TOKEN", f"hf_{SUITE}HuggingFace012345"),
    form("NPM_TOKEN", f"npm_{SUITE}Registry0123456789"),
    form("npm_config__auth", f"dXNlcjp{SUITE}wYXNzd29yZA=="),
    form("SLACK_WEBHOOK_URL", f"https://hooks.slack.com/services/T00/B00/{SUITE}Slack"),
    form("STRIPE_SK", f"sk_live_{SUITE}Stripe01234567"),
    form("DB_PASSWORD", f"{SUITE}-db-password-9876"),
    form("PGPASSWORD", f"{SUITE}-pg-password-5432"),
    form("MYSQL_PWD", f"{SUITE}-mysql-pwd-3306"),
    form("github_pat", f"{SUITE}_lower_case_pat_77"),
    form("deployToken", f"{SUITE}-camel-case-token-88"),
    form("DATABASE_URL", f"postgres://app:{PASSWORD}@db.internal:5432/app", PASSWORD),
    form("BUILD_NOTE", f"ghp_{SUITE}UnderAnOrdinaryName01"),
    form("SIGNING_MATERIAL", "-----BEGIN OPENSSH PRIVATE KEY-----\n"
                             f"{PEM_LINE}\n-----END OPENSSH PRIVATE KEY-----\n", PEM_LINE),
)
MARKS = {name: mark for name, _, mark in FORMS}
# Variables that are no credentials: they must reach commands, unredacted.
CONTROLS = {"TOKENIZERS_PARALLELISM": "ctl-tokenizers-41", "KEYBOARD_LAYOUT": "ctl-keyboard-42",
            "MAX_TOKENS": "ctl-max-tokens-43", "SSH_AUTH_SOCK": "/tmp/ctl-agent-44.sock"}
ENV = {**{name: value for name, value, _ in FORMS}, **CONTROLS}

# Set through the user's settings `env`: credentials there count as secrets too.
SETTINGS_ENV = {
    "SETTINGS_API_TOKEN": f"{SUITE}-settings-token-11",
    "SETTINGS_DB_URL": f"mysql://root:{SUITE}-settings-pw-12@db/app",
    "ANTHROPIC_API_KEY": f"sk-ant-api03-{SUITE}-from-settings-13",
    "SETTINGS_PLAIN": "ctl-settings-plain-45",
}
SETTINGS_MARKS = {"SETTINGS_API_TOKEN": SETTINGS_ENV["SETTINGS_API_TOKEN"],
                  "SETTINGS_DB_URL": f"{SUITE}-settings-pw-12",
                  "settings ANTHROPIC_API_KEY": SETTINGS_ENV["ANTHROPIC_API_KEY"]}
# Written literally into an MCP server's entry.
MCP_LITERAL = f"{SUITE}-mcp-entry-literal-21"
ENV_SERVER = str(Path(__file__).parents[1] / "mcp" / "env_server.py")


def secret_checks(*extra: str) -> tuple[NoSecret, ...]:
    return tuple(NoSecret(secret=mark) for mark in (*MARKS.values(), *extra))


def dump(id: str, file: str, *, extra: tuple[str, ...] = ()) -> Attempt:
    """Return a Bash call that writes its environment to `file` in the project and prints it."""
    return Attempt(id=id, call=bash(f"env | tee @P@/{file}"),
                   checks=(*secret_checks(*extra), *(Ran(contains=v) for v in CONTROLS.values())))


# ---------------------------------------------------------------------------- routes

BASH = (
    dump("bash_env", "bash.env"),
    # A process's environment is on the credential table: reading it asks (print mode refuses).
    Attempt(id="bash_proc_self", call=bash("cat /proc/self/environ | tr '\\0' '\\n'"),
            checks=(*secret_checks(), Refused(absent="ctl-keyboard-42"))),
    Attempt(id="bash_printenv_names", call=bash("printenv " + " ".join(MARKS) + "; echo end"),
            checks=(*secret_checks(), Ran(contains="end"))),
)

BACKGROUND = (
    Attempt(id="background_output", call=tool("BashOutput", bash_id="bash_1"),
            checks=secret_checks(),
            setup=(tool("Bash", command="env | tee @P@/background.env",
                        run_in_background=True),
                   # Wait for the job's event (its file written), not for a time.
                   bash("until [ -s @P@/background.env ]; do sleep 0.01; done"))),
)

SETTINGS = (
    dump("settings_env", "settings.env", extra=tuple(SETTINGS_MARKS.values())),
    Attempt(id="settings_value_in_a_file", call=read("@P@/notes.txt"),
            checks=(*secret_checks(*SETTINGS_MARKS.values()), Ran(contains="deploy notes"))),
)

HOOK_SCRIPT = """\
import json, os, sys
mode = sys.argv[1]
data = json.load(sys.stdin)
env = "\\n".join(f"{k}={v}" for k, v in sorted(os.environ.items()))
def say(event, **fields):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": event, **fields}}))
if mode == "prompt":
    say("UserPromptSubmit", additionalContext=env)
elif mode == "start":
    print(env)
elif mode == "deny":
    say("PreToolUse", permissionDecision="deny", permissionDecisionReason=env)
elif mode == "pre":
    say("PreToolUse", additionalContext=env)
elif mode == "post":
    say("PostToolUse", additionalContext=env)
elif mode == "block":
    print(json.dumps({"decision": "block", "reason": env}))
elif mode == "message":
    print(json.dumps({"systemMessage": env}))
elif mode == "stop" and not data.get("stop_hook_active"):
    print(json.dumps({"decision": "block", "reason": env}))
"""


def hook(mode: str, matcher: str | None = None) -> dict[str, object]:
    entry: dict[str, object] = {"hooks": [{"type": "command",
                                           "command": f"python3 @X@/hook.py {mode}"}]}
    return entry if matcher is None else {"matcher": matcher, **entry}


HOOK_SETTINGS = {"hooks": {
    "SessionStart": [hook("start")],
    "UserPromptSubmit": [hook("prompt")],
    "PreToolUse": [hook("deny", "Glob"), hook("pre", "Grep")],
    "PostToolUse": [hook("post", "Read"), hook("message", "Grep"), hook("block", "Bash")],
    "Stop": [hook("stop")],
}}
HOOKS = (
    Attempt(id="hook_pre_tool_deny", call=tool("Glob", pattern="*"), checks=secret_checks()),
    Attempt(id="hook_post_tool_context", call=read("@P@/README"),
            checks=(*secret_checks(), Ran(contains="hello from the readme"))),
    Attempt(id="hook_pre_context_and_message", call=tool("Grep", pattern="hello"),
            checks=secret_checks()),
    Attempt(id="hook_post_tool_block", call=bash("echo ran"), checks=secret_checks()),
)


def hook_steps(ws: Workspace) -> list[Step]:
    """The calls, then one more answer: the Stop hook sends the model back once."""
    return [*script(Batch(name="hooks", attempts=HOOKS), ws), Reply(text="done again")]


MCP_SETTINGS = {"mcpServers": {"probe": {
    "command": sys.executable, "args": [ENV_SERVER, "--dump", "@P@/mcp.env.json"],
    "env": {"PROBE_TOKEN": MCP_LITERAL, "HANDED": "${GITHUB_TOKEN}"}}}}
MCP = (
    Attempt(id="mcp_tool_result", call=tool("mcp__probe__env"),
            checks=(*secret_checks(MCP_LITERAL), Ran(contains="HOME="))),
    Attempt(id="mcp_tool_error", call=tool("mcp__probe__fail"),
            checks=secret_checks(MCP_LITERAL)),
    Attempt(id="mcp_resource_read", call=tool("ReadMcpResource", server="probe", uri="env://all"),
            checks=(*secret_checks(MCP_LITERAL), Ran(contains="HOME="))),
    Attempt(id="mcp_resource_listing", call=tool("ListMcpResources"),
            checks=(*secret_checks(MCP_LITERAL), Ran(contains="env://all"))),
)

COMMAND = "Here is the environment:\n!`env`\n"


def project_files(files: dict[str, str]) -> object:
    def build(ws: Workspace) -> None:
        for name, text in files.items():
            path = Path(ws.expand(name))
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(ws.expand(text))
    return build


def instructions_link(name: str) -> object:
    """A repository whose instruction file is a link to aimon's own environment."""
    def build(ws: Workspace) -> None:
        (ws.project / name).symlink_to("/proc/self/environ")
    return build


def fsmonitor_repo(ws: Workspace) -> None:
    """A repository whose configuration names the key in a file name while git runs."""
    make_repo(ws.project, {"a.txt": "one\n"})
    monitor = ws.project / ".git" / "fsmonitor.sh"
    monitor.write_text('#!/bin/sh\nfor v in "$OPENAI_API_KEY" "$GITHUB_TOKEN"; do\n'
                       '  : > "k-$v"\ndone\nexit 1\n')
    monitor.chmod(0o755)
    with (ws.project / ".git" / "config").open("a") as config:
        config.write(f"[core]\n\tfsmonitor = {monitor}\n")


# What these batches try is what a command may see, not whether it may run.
BYPASS = ("--allowed-tools", "Bash(tee:*),Bash(sleep:*),Bash(printenv:*)")
BATCHES = (
    Batch(name="secrets_route_bash", attempts=BASH, env=ENV, args=BYPASS),
    Batch(name="secrets_route_background", attempts=BACKGROUND, env=ENV,
          args=BYPASS),
    Batch(name="secrets_route_settings_env", attempts=SETTINGS, env=ENV,
          settings={"env": SETTINGS_ENV}, args=BYPASS,
          build=project_files({"@P@/notes.txt": "deploy notes: "
                                                + " ".join(SETTINGS_ENV.values()) + "\n"})),
    Batch(name="secrets_route_hooks", attempts=HOOKS, env=ENV, settings=HOOK_SETTINGS,
          build=project_files({"@X@/hook.py": HOOK_SCRIPT}), steps=hook_steps,
          provider="anthropic"),
    Batch(name="secrets_route_mcp", attempts=MCP, env=ENV, settings=MCP_SETTINGS,
          prompt="go, with @probe:env://all", args=(
              "--allowed-tools", "mcp__probe__env,mcp__probe__fail")),
    Batch(name="secrets_route_command", attempts=(), env=ENV, prompt="/envcmd",
          build=project_files({"@P@/../home/config/commands/envcmd.md": COMMAND})),
    Batch(name="secrets_zero_click_aimon_md", attempts=(), env=ENV,
          build=instructions_link("AIMON.md"), args=("--permission-mode", "plan")),
    Batch(name="secrets_zero_click_claude_md", attempts=(), env=ENV,
          build=instructions_link("CLAUDE.md"), args=("--permission-mode", "plan")),
    Batch(name="secrets_zero_click_git_config", attempts=(), env=ENV, build=fsmonitor_repo,
          args=("--permission-mode", "plan")),
)
NAMES = [batch.name for batch in BATCHES]
ALL_MARKS = {**MARKS, **SETTINGS_MARKS, "MCP entry literal": MCP_LITERAL}


@pytest.mark.parametrize(("batch", "attempt"), cases(BATCHES))
def test_attempt(batch: Batch, attempt: Attempt, outcomes: dict[str, Outcome]) -> None:
    check_attempt(batch, outcomes, attempt)


@pytest.mark.parametrize("secret", list(ALL_MARKS))
@pytest.mark.parametrize("name", NAMES)
def test_no_credential_in_any_request(name: str, secret: str,
                                      outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[name]
    assert outcome.returncode == 0, outcome.summary()
    assert outcome.bodies != "[]", "aimon sent no request"
    assert ALL_MARKS[secret] not in outcome.bodies


@pytest.mark.parametrize("secret", list(ALL_MARKS))
@pytest.mark.parametrize("name", NAMES)
def test_no_credential_printed(name: str, secret: str, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[name]
    assert ALL_MARKS[secret] not in outcome.stdout
    assert ALL_MARKS[secret] not in outcome.stderr


def written(outcome: Outcome) -> dict[Path, str]:
    """Return every file aimon may have written (sessions, transcripts, spills), by path."""
    ws = outcome.workspace
    settings = ws.home / "config"
    return {path: path.read_text(errors="replace")
            for root in (ws.home, ws.user_home) for path in sorted(root.rglob("*"))
            if path.is_file() and not path.is_relative_to(settings)}


@pytest.mark.parametrize("secret", list(ALL_MARKS))
@pytest.mark.parametrize("name", NAMES)
def test_no_credential_stored(name: str, secret: str, outcomes: dict[str, Outcome]) -> None:
    files = written(outcomes[name])
    assert any(path.suffix == ".jsonl" for path in files), "no session file was written"
    for path, text in files.items():
        assert ALL_MARKS[secret] not in text, f"{path} holds it"


# ---------------------------------------------------------------------------- the first wall

# (batch, file in the project): the environment of a process the model started, and the
# credentials it may hold because its configuration names them.
DUMPS = {
    "bash": ("secrets_route_bash", "bash.env", ()),
    "background job": ("secrets_route_background", "background.env", ()),
    "settings env": ("secrets_route_settings_env", "settings.env", ()),
    "MCP server": ("secrets_route_mcp", "mcp.env.json", ("GITHUB_TOKEN", "MCP entry literal")),
}


@pytest.mark.parametrize("secret", list(ALL_MARKS))
@pytest.mark.parametrize("process", list(DUMPS))
def test_no_credential_in_a_model_process_environment(
        process: str, secret: str, outcomes: dict[str, Outcome]) -> None:
    name, file, handed = DUMPS[process]
    text = (outcomes[name].workspace.project / file).read_text()
    if secret in handed:  # its entry names it: the server gets it, the model does not
        assert ALL_MARKS[secret] in text
    else:
        assert ALL_MARKS[secret] not in text


@pytest.mark.parametrize("process", [p for p in DUMPS if p != "MCP server"])
def test_ordinary_variables_still_reach_commands(process: str,
                                                 outcomes: dict[str, Outcome]) -> None:
    name, file, _ = DUMPS[process]
    text = (outcomes[name].workspace.project / file).read_text()
    for variable, value in CONTROLS.items():
        assert f"{variable}={value}\n" in text
    if process == "settings env":
        assert "SETTINGS_PLAIN=ctl-settings-plain-45\n" in text


def test_the_mcp_server_gets_only_a_safe_environment(outcomes: dict[str, Outcome]) -> None:
    ws = outcomes["secrets_route_mcp"].workspace
    env = json.loads((ws.project / "mcp.env.json").read_text())
    assert env["HANDED"] == dict(ENV)["GITHUB_TOKEN"] and env["PROBE_TOKEN"] == MCP_LITERAL
    assert env["AIMON_PROJECT_DIR"] == str(ws.project)
    assert not set(env) & set(ENV)  # none of aimon's variables but the safe ones
    assert "PATH" in env and "HOME" in env
