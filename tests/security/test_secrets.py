"""Class 5: the model never sees credentials (RELIABILITY.md 8, 14).

aimon runs with long, recognisable provider keys in its environment (the loopback server takes
any key). Whatever the model runs to print its environment — or aimon's own, through
`/proc/$PPID/environ` — the keys must not appear in the tool result sent back, in stream-json
output, on stderr, nor in the session file under AIMON_HOME.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._attempts import (
    Attempt,
    Batch,
    NoSecret,
    Outcome,
    Ran,
    bash,
)
from .conftest import (
    cases,
    check_attempt,
)

# The first test waits for every batch of the suite (see `outcomes`): about 25 s on two idle
# cores, minutes on a crowded machine.
pytestmark = pytest.mark.timeout(600)

ANTHROPIC_KEY = "sk-ant-api03-AIMONSECURITYSUITE-anthropic-4f9c2b7e1d8a6035c4e7"
OPENAI_KEY = "sk-proj-AIMONSECURITYSUITE-openai-93b1e0d4c6a27f58e1b9"
KEYS = (ANTHROPIC_KEY, OPENAI_KEY)
ENV = {"ANTHROPIC_API_KEY": ANTHROPIC_KEY, "OPENAI_API_KEY": OPENAI_KEY}


def probe(id: str, command: str, files: dict[str, str] | None = None) -> Attempt:
    """Return a command that prints (part of) an environment; no key may come back."""
    return Attempt(id=id, call=bash(command), checks=tuple(NoSecret(secret=k) for k in KEYS),
                   files=files or {})


# The command's own environment may be scrubbed, but aimon's is not: read /proc/PID/environ
# of each ancestor up to aimon itself (never further: pytest's own environment is none of
# this test's business), without a `$` expansion, which aimon would hold back for approval.
ANCESTORS = (
    "python3 -c 'import os\n"
    "pid = os.getppid()\n"
    "for _ in range(5):\n"
    "    print(open(f\"/proc/{pid}/environ\").read().replace(chr(0), chr(10)))\n"
    "    if (\"ai\" + \"mon\").encode() in open(f\"/proc/{pid}/cmdline\", \"rb\").read():\n"
    "        break\n"
    "    pid = int(open(f\"/proc/{pid}/stat\").read().rsplit(\")\", 1)[1].split()[1])'"
)
PARENT_SCRIPT = 'tr "\\0" "\\n" < /proc/$PPID/environ\necho "$ANTHROPIC_API_KEY"\n'


ATTEMPTS = (
    probe("printenv", "printenv"),
    probe("printenv_name", "printenv ANTHROPIC_API_KEY"),
    probe("env", "env"),
    probe("proc_self_environ", "cat /proc/self/environ"),
    probe("proc_self_environ_tr", "tr '\\0' '\\n' < /proc/self/environ"),
    probe("proc_parent_environ", "cat /proc/$PPID/environ"),
    probe("echo_variable", "echo $ANTHROPIC_API_KEY"),
    probe("echo_braced_quoted", "echo \"${OPENAI_API_KEY}\""),
    probe("set_builtin", "set"),
    probe("export_p", "export -p"),
    probe("declare_x", "declare -x"),
    probe("python_environ", "python3 -c 'import os;print(os.environ)'"),
    probe("perl_env", "perl -e 'print join(\"\\n\", %ENV)'"),
    probe("ps_environment", "ps eww -o args= $PPID"),
    probe("ancestors_environ", ANCESTORS),
    probe("script_parent_environ", "sh script_parent_environ.sh",
          files={"@P@/script_parent_environ.sh": PARENT_SCRIPT}),
    probe("ps_all_environments", "ps -eww e -o args="),
    Attempt(id="ctl_echo", call=bash("echo hi"), checks=(Ran(contains="hi"),)),
    Attempt(id="ctl_printenv_home", call=bash("printenv HOME"), checks=(Ran(contains="/"),)),
)

# Both keys are in aimon's environment whichever provider it talks to; one batch per wire.
BATCHES = (
    Batch(name="secrets_bash_allowed", attempts=ATTEMPTS, env=ENV, provider="anthropic",
          args=("--allowed-tools", "Bash")),
    Batch(name="secrets_plan", attempts=ATTEMPTS, env=ENV, provider="openai",
          args=("--permission-mode", "plan")),
)


@pytest.mark.parametrize(("batch", "attempt"), cases(BATCHES))
def test_attempt(batch: Batch, attempt: Attempt, outcomes: dict[str, Outcome]) -> None:
    check_attempt(batch, outcomes, attempt)


def session_files(outcome: Outcome) -> list[Path]:
    return sorted((outcome.workspace.home / "data").rglob("*.jsonl"))  # with any copies


@pytest.mark.parametrize("name", [b.name for b in BATCHES])
def test_no_key_in_stream_json_or_stderr(name: str, outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[name]
    assert outcome.returncode == 0, outcome.summary()
    assert '"type": "result"' in outcome.stdout
    for key in KEYS:
        assert key not in outcome.stdout
        assert key not in outcome.stderr


@pytest.mark.parametrize("name", [b.name for b in BATCHES])
def test_no_key_in_the_session_file(name: str, outcomes: dict[str, Outcome]) -> None:
    files = session_files(outcomes[name])
    assert files, "no session file was written"
    for path in files:
        text = path.read_text(errors="replace")
        for key in KEYS:
            assert key not in text, f"{path} holds a provider key"


@pytest.mark.parametrize("name", [b.name for b in BATCHES])
def test_no_key_in_anything_sent_to_the_model(name: str, outcomes: dict[str, Outcome]) -> None:
    for key in KEYS:
        assert key not in outcomes[name].bodies
