"""Auto-allowed reads never reach credential files or `/proc/*/environ` (issue 23.3).

Even with no rule configured, a Bash command aimon would allow by itself (read-only, or by an
allow rule) that reads a credential file in the home folder (`~/.aws`, `~/.ssh`, `~/.netrc`,
`~/.config/gh`, `~/.claude/.credentials.json`, ...) or any process's environment
(`/proc/self/environ`, `/proc/1/environ`, through `/proc/self/root`, `/dev/fd/..`, relative
paths, globs) asks; so does a Read, Grep or Glob call on one, and Grep and Glob searches of a
folder around them skip them. Generated table: credential locations by spellings by programs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.permission import PermissionMode, PermissionPolicy, read_filter
from aimon_core.tools import Tool, builtin_tools

from ._project import ALLOW, ASK, decide_in, make_project, rules

# The brief's list, and the usual places of other tools' tokens.
LOCATIONS = [
    ".aws/credentials", ".aws/config", ".ssh/id_rsa", ".ssh/id_ed25519", ".ssh/config",
    ".netrc", ".config/gh/hosts.yml", ".claude/.credentials.json", ".docker/config.json",
    ".kube/config", ".npmrc", ".pypirc", ".git-credentials", ".config/git/credentials",
    ".config/gcloud/application_default_credentials.json", ".config/gcloud/credentials.db",
    ".azure/accessTokens.json", ".gnupg/private-keys-v1.d/k.key", ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json", ".vault-token", ".pgpass", ".my.cnf",
    ".config/hub", ".gem/credentials", ".m2/settings-security.xml", ".claude.json",
]
# `{f}`: the credential file as `~/...`; `{abs}`: absolute; `{rel}`: relative to the project.
SPELLINGS = [
    "cat {f}", "cat {abs}", "cat {rel}", "head -c 10 {f}", "tail {abs}", "grep -n x {f}",
    "sort {abs}", "wc -c {f}", "diff {f} a.txt", "cat < {f}", "cat < {abs}", "nl {f}",
    "sed -n 1p {f}", "cut -c1-3 {abs}", "file {f}", "cat ./{link}/{leaf}", "cat {glob}",
    "cat {dir}/{star}", "grep -r x {dir}", "rg x {dir}", "grep -f {f} a.txt", "cat -- {abs}",
]
ENVIRON = [
    "cat /proc/self/environ", "cat /proc/1/environ", "cat /proc/thread-self/environ",
    "cat /proc/self/task/*/environ", "cat /proc/*/environ", "head -c 99 /proc/self/environ",
    "tr '\\0' '\\n' < /proc/self/environ", "cat /proc/self/root/proc/self/environ",
    "cat /proc/self/root/proc/1/environ", "cat /dev/fd/../environ", "cat /proc/self/fd/../environ",
    "cat /proc/se?f/environ", "cat /proc/[s]elf/environ", "cat /proc/$PPID/environ",
    "cat /proc/self/cwd/../../../../../../../proc/self/environ",
    "cat ../../../../../../../../../../proc/self/environ", "cd /proc && cat self/environ",
    "cd /proc/self && cat environ", "grep -a PATH /proc/self/environ", "grep -r x /proc/self",
    "sort -z /proc/self/environ", "cat /proc/self/mem", "cat /proc/self/task/../environ",
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("credentials") / "home"
    for location in LOCATIONS:
        path = home / location
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("token=t0ps3cret\n")
    (home / "notes.txt").write_text("just notes\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        yield home


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, home: Path) -> Path:
    """One project for the module (deciding writes nothing): a link to each credential folder."""
    project = make_project(tmp_path_factory.mktemp("credentials") / "proj")
    for location in {_link(location): location for location in LOCATIONS}.values():
        (project / _link(location)).symlink_to((home / location).parent)
    (project / "keys").symlink_to(home / ".ssh")
    return project


def _link(location: str) -> str:
    """Return the project's link to `location`'s folder."""
    return "link-" + str(Path(location).parent).replace("/", "-").replace(".", "_")


def _spelled(spelling: str, location: str, home: Path, project: Path) -> str:
    path = home / location
    rel = os.path.relpath(path, project)
    glob = str(path.parent / (path.name[:-1] + "?")) if len(path.name) > 1 else str(path)
    return spelling.format(f=f"~/{location}", abs=path, rel=rel, leaf=path.name,
                           link=_link(location),
                           dir=f"~/{Path(location).parent}" if "/" in location else "~",
                           star=".*" if path.name.startswith(".") else "*", glob=glob)


@pytest.mark.parametrize("location", LOCATIONS)
@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("allow", [(), ("Bash(cat:*)", "Bash(grep:*)")],
                         ids=["read-only", "rules"])
def test_reading_a_credential_file_asks(home: Path, project: Path, location: str,
                                        spelling: str, allow: tuple[str, ...]) -> None:
    command = _spelled(spelling, location, home, project)
    decision = decide_in(project, command, rules(allow=allow))
    assert decision.verdict is ASK, (command, decision.reason)


@pytest.mark.parametrize("command", ENVIRON)
def test_reading_a_process_environment_asks(project: Path, command: str) -> None:
    for allow in ((), ("Bash",)):
        decision = decide_in(project, command, rules(allow=allow))
        assert decision.verdict is ASK, (command, allow, decision.reason)


@pytest.mark.parametrize("command", ["grep -r x ~", "rg x ~", "grep -R x .", "rg -L x",
                                     "grep -r x /", "diff -r ~ ."])
def test_a_recursive_read_around_credentials_asks(home: Path, project: Path,
                                                  command: str) -> None:
    decision = decide_in(project, command, rules())
    assert decision.verdict is ASK, decision.reason


def _tools() -> dict[str, Tool]:
    return {tool.name: tool for tool in builtin_tools()}


FOLDERS = [".aws", ".ssh", ".gnupg", ".config/gh", ".config/gcloud", ".kube", ".azure"]
FILE_TOOLS = [("Read", "file_path"), ("Grep", "path"), ("Glob", "path")]


@pytest.mark.parametrize("location", LOCATIONS + FOLDERS)
@pytest.mark.parametrize(("tool", "param"), FILE_TOOLS)
def test_file_tools_ask_for_credentials(home: Path, project: Path, location: str, tool: str,
                                        param: str) -> None:
    policy = PermissionPolicy(rules(), PermissionMode.DEFAULT, project)
    for target in (str(home / location), f"~/{location}"):
        tool_input = {param: target} | ({"pattern": "x"} if tool != "Read" else {})
        decision = policy.decide(_tools()[tool], tool_input)
        assert decision.verdict is ASK, (target, decision.reason)


@pytest.mark.parametrize("location", LOCATIONS)
def test_searches_of_the_home_folder_skip_credentials(home: Path, project: Path,
                                                      location: str) -> None:
    allowed = read_filter(lambda: rules(), project)
    assert not allowed(home / location)
    assert allowed(home / "notes.txt")
    assert not allowed(project / _link(location) / Path(location).name)


@pytest.mark.parametrize("path", ["/proc/self/environ", "/proc/1/environ"])
def test_the_read_tool_asks_for_a_process_environment(project: Path, path: str) -> None:
    policy = PermissionPolicy(rules(), PermissionMode.DEFAULT, project)
    assert policy.decide(_tools()["Read"], {"file_path": path}).verdict is ASK


CONTROLS = [
    "cat ~/notes.txt", "ls ~", "ls -la ~/.aws/..", "cat /proc/cpuinfo", "cat /proc/self/status",
    "grep -rn foo src", "cat src/*.py", "head -n 3 a.txt", "ls /proc/self", "wc -l ~/notes.txt",
]


@pytest.mark.parametrize("command", CONTROLS)
def test_controls_stay_allowed(home: Path, project: Path, command: str) -> None:
    decision = decide_in(project, command, rules())
    assert decision.verdict is ALLOW, decision.reason


def test_the_read_tool_still_reads_ordinary_home_files(home: Path, project: Path) -> None:
    policy = PermissionPolicy(rules(), PermissionMode.DEFAULT, project)
    read = _tools()["Read"]
    assert policy.decide(read, {"file_path": str(home / "notes.txt")}).verdict is ALLOW
    assert policy.decide(read, {"file_path": str(project / "a.txt")}).verdict is ALLOW


def test_bypass_mode_still_allows(home: Path, project: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIMON_SANDBOX", "1")
    policy = PermissionPolicy(rules(), PermissionMode.BYPASS, project)
    decision = policy.decide(_tools()["Read"], {"file_path": str(home / ".aws/credentials")})
    assert decision.verdict is ALLOW
