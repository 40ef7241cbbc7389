"""The OS sandbox holds: a generated table of commands that try to escape it, none has an effect.

Every case runs through a `LocalShell` with a `Sandbox`, as the Bash tool runs commands:
writes outside the project and into its protected files (`.git/hooks`, `.git/config`,
`.aimon/`, `.claude/`, `.mcp.json`, the home folder) by every way of writing; reads of
credential files in a fake home folder and of this process's `/proc/<pid>/environ`; a
connection to a loopback server nobody allowed, direct and through the proxy; processes left
running after the command, after a background job is killed and after a cancelled run. The
same ways of writing and reading work inside the project and the session's temporary folder.

All cases share one shell and one event loop (`outcomes`), so the session's network namespace
is made once; each case is its own test. Skipped, with the reason, where bubblewrap cannot run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from aimon_core.shell import (
    LocalShell,
    NetworkVerdict,
    Sandbox,
    SandboxConfig,
    SandboxPaths,
    ShellResult,
    probe_sandbox,
)

PROBE = probe_sandbox()
pytestmark = pytest.mark.skipif(not PROBE.available,
                                reason=f"the sandbox cannot run here: {PROBE.describe()}")

KEY = "sk-ant-api03-SANDBOXTABLE-5b1f9c0e7a2d4c6b8e3f"
GIT_CONFIG = "[core]\n\tbare = false\n"
AIMON_SETTINGS = '{"permissions": {"deny": ["Bash(rm:*)"]}}\n'
SECRETS = {".ssh/id_rsa": "SECRET-ssh-41c2", ".aws/credentials": "SECRET-aws-8d0e",
           ".netrc": "SECRET-netrc-77a1", ".config/gh/hosts.yml": "SECRET-gh-2f9b",
           ".claude/.credentials.json": "SECRET-claude-c3d5"}


@dataclass(frozen=True, slots=True, kw_only=True)
class World:
    """The folders of the table: the project, a folder outside it, a fake home."""

    root: Path

    @property
    def project(self) -> Path:
        return self.root / "proj"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def fill(self, text: str, case: str, port: int = 0) -> str:
        return (text.replace("{P}", str(self.project)).replace("{X}", str(self.outside))
                .replace("{H}", str(self.home)).replace("{ID}", case)
                .replace("{PORT}", str(port)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One command and what must hold after it (`harm`: the effect that must not happen)."""

    id: str
    command: str
    check: Callable[[World, ShellResult, list[str]], str | None]
    # Runs in a project of its own: it would change the project under the other cases.
    alone: bool = False


def absent(path: str) -> Callable[[World, ShellResult, list[str]], str | None]:
    def check(world: World, result: ShellResult, hits: list[str]) -> str | None:
        target = Path(world.fill(path, ""))
        return f"{target} was written" if target.exists() or target.is_symlink() else None
    return check


def unchanged(path: str, text: str) -> Callable[[World, ShellResult, list[str]], str | None]:
    def check(world: World, result: ShellResult, hits: list[str]) -> str | None:
        now = Path(world.fill(path, "")).read_text()
        return f"{path} changed to {now!r}" if now != text else None
    return check


def exists(path: str) -> Callable[[World, ShellResult, list[str]], str | None]:
    def check(world: World, result: ShellResult, hits: list[str]) -> str | None:
        target = Path(world.fill(path, ""))
        return None if target.exists() else f"{target} was not written: {result.stderr!r}"
    return check


def lacks(*secrets: str) -> Callable[[World, ShellResult, list[str]], str | None]:
    def check(world: World, result: ShellResult, hits: list[str]) -> str | None:
        out = result.stdout + result.stderr
        leaked = [s for s in secrets if s in out or s[::-1] in out]
        return f"read {leaked}" if leaked else None
    return check


def shows(text: str) -> Callable[[World, ShellResult, list[str]], str | None]:
    def check(world: World, result: ShellResult, hits: list[str]) -> str | None:
        return None if text in result.stdout else f"did not read it: {result!r}"
    return check


def unreached(case: str) -> Callable[[World, ShellResult, list[str]], str | None]:
    def check(world: World, result: ShellResult, hits: list[str]) -> str | None:
        return f"the loopback server was reached: {hits}" if case in hits else None
    return check


# ---------------------------------------------------------------------------- the table

WRITES = {  # how a command writes T (a file whose folder exists or is made)
    "redirect": "echo pwned > T",
    "append": "echo pwned >> T",
    "touch": "touch T",
    "python": "python3 -c \"open('T', 'w').write('pwned')\"",
    "cp": "cp {P}/README T",
    "mv": "echo pwned > {P}/moved-{ID} && mv {P}/moved-{ID} T",
    "mkdir": "mkdir -p \"$(dirname T)\" && echo pwned > T",
    "symlink": "ln -s /etc/hostname T",
    "tee": "echo pwned | tee T",
    "sh-script": "printf 'echo pwned > T\\n' > {P}/w-{ID}.sh && sh {P}/w-{ID}.sh",
}
TARGETS = {  # where: the path written, and the check that it was not
    "outside": ("{X}/{ID}", None),
    "home": ("{H}/.bashrc-{ID}", None),
    "git-hooks": ("{P}/.git/hooks/{ID}", None),
    "git-config": ("{P}/.git/config", GIT_CONFIG),
    "aimon": ("{P}/.aimon/settings.json", AIMON_SETTINGS),
    "aimon-new-file": ("{P}/.aimon/{ID}", None),
    "claude-missing": ("{P}/.claude/{ID}", None),  # no .claude/ yet: its place is held
    "mcp-json-missing": ("{P}/.mcp.json", None),
}
# Ways round: replace the protected folder, write through a link that leads out.
ROUNDABOUT = {
    "rename-git": ("mv {P}/.git {P}/.git-old; mkdir -p {P}/.git/hooks; "
                   "echo pwned > {P}/.git/hooks/pre-commit", "{P}/.git/hooks/pre-commit"),
    "rename-git-back": ("mv {P}/.git {P}/.git-old-{ID}", "{P}/.git-old-{ID}"),
    "make-claude": ("mkdir -p {P}/.claude/commands && echo pwned > {P}/.claude/commands/x.md",
                    "{P}/.claude/commands/x.md"),
    "rmdir-hooks": ("rm -rf {P}/.git/hooks; mkdir {P}/.git/hooks && "
                    "echo pwned > {P}/.git/hooks/post-checkout", "{P}/.git/hooks/post-checkout"),
    "link-out": ("ln -s {X} {P}/out-{ID} && echo pwned > {P}/out-{ID}/{ID}", "{X}/{ID}"),
    "parent": ("echo pwned > {P}/../{ID}", "{P}/../{ID}"),
}
READS = {  # how a command reads F
    "cat": "cat F",
    "python": "python3 -c \"print(open('F').read())\"",
    "copy-in": "cp F {P}/copy-{ID} && cat {P}/copy-{ID}",
    "grep-r": "grep -r SECRET {H}",
    "tar": "tar -cf - F | strings",
}
ENVIRON = {  # how a command finds the provider key in the environment of aimon ({PID})
    "proc-pid": "tr '\\0' '\\n' < /proc/{PID}/environ | rev",
    "proc-walk": ("python3 -c \"import os\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n"
                  "    try: env = open(f'/proc/{pid}/environ').read().split(chr(0))\n"
                  "    except OSError: continue\n"
                  "    print([v[::-1] for v in env if 'API_KEY' in v])\""),
}
NETWORK = {  # how a command reaches the loopback server at {PORT} (it records {ID})
    "direct": ("python3 -c \"import socket; s = socket.create_connection(('127.0.0.1', {PORT}));"
               " s.sendall(b'{ID}\\n')\""),
    # urllib takes HTTP_PROXY from the environment: in the sandbox, aimon's proxy.
    "urllib": ("env -u NO_PROXY -u no_proxy python3 -c \"import urllib.request as u; "
               "u.urlopen('http://127.0.0.1:{PORT}/{ID}', timeout=5)\""),
    "bash-tcp": "echo {ID} > /dev/tcp/127.0.0.1/{PORT}",
}
# Processes a command leaves behind, each a `sleep` for a number that marks it.
LEFT_RUNNING = {
    "background": ("sleep 987601 & echo started", "987601"),
    "setsid": ("setsid sleep 987602 > /dev/null 2>&1 & echo started", "987602"),
    "nohup": ("nohup sleep 987603 > /dev/null 2>&1 & echo started", "987603"),
    "double-fork": ("( ( sleep 987604 > /dev/null 2>&1 & ) & ) ; echo started", "987604"),
    "daemon": ("python3 -c \"import os, subprocess\nif os.fork() == 0:\n    os.setsid()\n"
               "    subprocess.Popen(['sleep', '987605'], stdout=subprocess.DEVNULL, "
               "stderr=subprocess.DEVNULL)\"", "987605"),
}


def cases() -> list[Case]:
    """Return the generated table: attacks, then the controls that must work."""
    found: list[Case] = []
    for target, (path, text) in TARGETS.items():
        # A folder that does not exist is written only by a way that makes it.
        ways = ["mkdir"] if target == "claude-missing" else list(WRITES)
        for how, command in ((w, WRITES[w]) for w in ways):
            case = f"write-{target}-{how}"
            spot = path.replace("{ID}", case)
            check = unchanged(spot, text) if text is not None else absent(spot)
            found.append(Case(id=case, command=command.replace("T", spot), check=check))
    for name, (command, harm) in ROUNDABOUT.items():
        case = f"roundabout-{name}"
        found.append(Case(id=case, command=command, check=absent(harm.replace("{ID}", case)),
                          alone=True))
    for path, secret in SECRETS.items():
        for how, command in READS.items():
            found.append(Case(id=f"read-{path.split('/')[0].strip('.')}-{how}",
                              command=command.replace("F", f"{{H}}/{path}"),
                              check=lacks(secret)))
    for how, command in ENVIRON.items():
        found.append(Case(id=f"environ-{how}", command=command, check=lacks(KEY)))
    for how, command in NETWORK.items():
        found.append(Case(id=f"network-{how}", command=command,
                          check=unreached(f"network-{how}")))
    for how, command in WRITES.items():
        for where in ("{P}/sub", "$TMPDIR"):
            case = f"control-write-{'tmp' if where == '$TMPDIR' else 'project'}-{how}"
            spot = f"{where}/{case}"
            check = exists(spot) if where != "$TMPDIR" else (lambda w, r, h: None)
            found.append(Case(id=case, command=f"mkdir -p {where} && "
                              + command.replace("T", spot), check=check))
    found.append(Case(id="control-read-project", command="cat {P}/README",
                      check=shows("hello")))
    found.append(Case(id="control-read-home", command="cat {H}/.profile", check=shows("PS1")))
    return found


CASES = cases()


# ---------------------------------------------------------------------------- running


def survivors(marks: tuple[str, ...]) -> list[str]:
    """Return the command lines of live processes that hold one of `marks`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            if any(mark in line for mark in marks) and "pytest" not in line:
                found.append(f"{entry.name}: {line}")
    return found


def _kill(marks: tuple[str, ...]) -> None:
    for line in survivors(marks):
        with contextlib.suppress(OSError):
            os.kill(int(line.split(":")[0]), 9)


def make_world(root: Path) -> World:
    world = World(root=root)
    for folder in (world.project / ".git" / "hooks", world.outside, world.home):
        folder.mkdir(parents=True, exist_ok=True)
    (world.project / "README").write_text("hello from the readme\n")
    (world.project / ".git" / "config").write_text(GIT_CONFIG)
    (world.project / ".aimon").mkdir(exist_ok=True)
    (world.project / ".aimon" / "settings.json").write_text(AIMON_SETTINGS)
    (world.home / ".profile").write_text("PS1='$ '\n")
    for path, secret in SECRETS.items():
        (world.home / path).parent.mkdir(parents=True, exist_ok=True)
        (world.home / path).write_text(secret + "\n")
    return world


def sandboxed_shell(world: World, allow: tuple[str, ...] = ()) -> LocalShell:
    """Return a shell whose sandbox allows the network to `allow` (host:port) only."""
    from aimon_core.shell import domain_matches

    async def gate(host: str, port: int, command: str) -> NetworkVerdict:
        if any(domain_matches(p, host, port) for p in allow):
            return NetworkVerdict(allowed=True)
        return NetworkVerdict(allowed=False, reason="not allowed in this test")

    config = SandboxConfig(paths=SandboxPaths(project=world.project, home=world.home))
    return LocalShell(sandbox=Sandbox(config, PROBE, gate=gate))


def run_once(shell: LocalShell, command: str, cwd: Path, **options: bool) -> ShellResult:
    """Run one command in `shell`, then close it (its sandbox with it)."""
    async def run() -> ShellResult:
        try:
            return await shell.run(command, cwd=cwd, timeout=30, **options)
        finally:
            await shell.close()

    return asyncio.run(run())


async def loopback(hits: list[str]) -> asyncio.Server:
    """Start a server on 127.0.0.1 that records the first word each client sends."""
    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        words = line.decode(errors="replace").replace("/", " ").split()
        hits.extend(word for word in words if word.startswith("network-"))
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
        writer.close()

    return await asyncio.start_server(record, "127.0.0.1", 0)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[tuple[dict[str, World], dict[str, ShellResult], list[str]]]:
    """Run every case in a sandboxed shell; yield each case's world, its result, and the ids
    the loopback server heard.

    The cases share one world and shell, but for those that run `alone` (each its own).
    A process started with the provider key in its environment stands in for aimon.
    """
    base = tmp_path_factory.mktemp("sandbox-table")
    shared = make_world(base / "shared")
    worlds = {case.id: make_world(base / case.id) if case.alone else shared for case in CASES}
    hits: list[str] = []
    results: dict[str, ShellResult] = {}
    aimon = subprocess.Popen(["sleep", "600"], env={**os.environ, "ANTHROPIC_API_KEY": KEY})

    async def run(cases: list[Case], world: World, port: int) -> None:
        shell = sandboxed_shell(world)
        try:
            for case in cases:
                command = world.fill(case.command, case.id, port).replace("{PID}",
                                                                          str(aimon.pid))
                results[case.id] = await shell.run(command, cwd=world.project, timeout=30)
        finally:
            await shell.close()

    async def run_all() -> None:
        server = await loopback(hits)
        port = server.sockets[0].getsockname()[1]
        try:
            await run([c for c in CASES if not c.alone], shared, port)
            for case in CASES:
                if case.alone:
                    await run([case], worlds[case.id], port)
        finally:
            server.close()

    try:
        asyncio.run(run_all())
    finally:
        aimon.kill()
        aimon.wait()
    yield worlds, results, hits


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_sandbox_holds(case: Case, outcomes: tuple[dict[str, World],
                                                      dict[str, ShellResult], list[str]]) -> None:
    worlds, results, hits = outcomes
    problem = case.check(worlds[case.id], results[case.id], hits)
    assert problem is None, f"{case.command}: {problem}"


def test_no_placeholder_is_left_behind(
        outcomes: tuple[dict[str, World], dict[str, ShellResult], list[str]]) -> None:
    worlds, _, _ = outcomes
    left = [str(world.project / name) for world in set(worlds.values())
            for name in (".claude", ".mcp.json") if (world.project / name).exists()]
    assert left == []


# ---------------------------------------------------------------------------- processes


@pytest.mark.parametrize("how", list(LEFT_RUNNING))
def test_no_process_outlives_its_command(how: str, tmp_path: Path) -> None:
    world = make_world(tmp_path)
    command, mark = LEFT_RUNNING[how]

    try:
        result = run_once(sandboxed_shell(world), command, world.project)
        assert survivors((f"sleep {mark}", f"'sleep', '{mark}'")) == [], result
    finally:
        _kill((f"sleep {mark}",))


def _background(world: World, command: str) -> str:
    """Run `command` as a background job until it writes to the FIFO `{UP}`, then kill it;
    return its stderr."""
    async def run() -> str:
        shell = sandboxed_shell(world)
        try:
            up = _fifo(world)
            job = await shell.start_background(command.replace("{UP}", str(up)),
                                               cwd=world.project)
            await _said(up)
            return (await shell.kill_background(job)).stderr
        finally:
            await shell.close()

    return asyncio.run(run())


def test_a_killed_background_job_leaves_nothing_running(tmp_path: Path) -> None:
    marks = ("sleep 987611", "sleep 987612")
    try:
        _background(make_world(tmp_path),
                    f"setsid {marks[0]} > /dev/null 2>&1 & echo up > {{UP}}; {marks[1]}")
        assert survivors(marks) == []
    finally:
        _kill(marks)


def test_a_background_job_is_sandboxed_too(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    stderr = _background(world, f"echo pwned > {world.outside}/bg; "
                                f"echo pwned > {world.project}/.git/hooks/bg; echo up > {{UP}}")
    assert not (world.outside / "bg").exists(), stderr
    assert not (world.project / ".git" / "hooks" / "bg").exists(), stderr


def test_a_cancelled_command_leaves_nothing_running(tmp_path: Path) -> None:
    """Ctrl-C cancels the turn's task: the command and all it started end with it."""
    world = make_world(tmp_path)
    marks = ("sleep 987621", "sleep 987622")

    async def run() -> None:
        shell = sandboxed_shell(world)
        try:
            up = _fifo(world)
            task = asyncio.create_task(shell.run(
                f"setsid {marks[0]} > /dev/null 2>&1 & echo up > {up}; {marks[1]}",
                cwd=world.project, timeout=60))
            await _said(up)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        finally:
            await shell.close()

    try:
        asyncio.run(run())
        assert survivors(marks) == []
    finally:
        _kill(marks)


async def _said(fifo: Path, seconds: float = 20.0) -> None:
    """Wait until a command writes a line into `fifo` (made here), at most `seconds`."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    loop = asyncio.get_running_loop()
    heard: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if os.read(fd, 64) and not heard.done():
            heard.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await asyncio.wait_for(heard, seconds)
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _fifo(world: World) -> Path:
    path = world.project / "up"
    os.mkfifo(path)
    return path


# ---------------------------------------------------------------------------- the network


def test_an_allowed_domain_is_reached_through_the_proxy(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    hits: list[str] = []

    async def run() -> ShellResult:
        server = await loopback(hits)
        port = server.sockets[0].getsockname()[1]
        shell = sandboxed_shell(world, allow=(f"127.0.0.1:{port}",))
        try:
            command = world.fill(NETWORK["urllib"], "network-allowed", port)
            return await shell.run(command, cwd=world.project, timeout=30)
        finally:
            await shell.close()
            server.close()

    result = asyncio.run(run())
    assert hits == ["network-allowed"], result


def test_a_refused_connection_is_named_in_the_result(tmp_path: Path) -> None:
    world = make_world(tmp_path)

    result = run_once(sandboxed_shell(world), world.fill(NETWORK["urllib"], "network-named", 9),
                      world.project)
    assert "network access refused: 127.0.0.1:9 (not allowed in this test)" in result.stderr
    assert "dangerouslyDisableSandbox: true" in result.stderr


def test_without_the_sandbox_the_same_shell_runs_commands_plainly(tmp_path: Path) -> None:
    """`sandbox=False` (a call that asked to leave it, when the settings allow that)."""
    world = make_world(tmp_path)

    result = run_once(sandboxed_shell(world), f"touch {world.outside}/plain", world.project,
                      sandbox=False)
    assert (world.outside / "plain").exists(), result


def test_git_works_in_the_sandbox(tmp_path: Path) -> None:
    """A commit needs `.git` writable (objects, refs, index): only config and hooks are not."""
    world = make_world(tmp_path)
    subprocess.run(["git", "init", "-q", str(world.project)], check=True)

    result = run_once(sandboxed_shell(world),
                      "git -c user.name=t -c user.email=t@example.invalid add README && "
                      "git -c user.name=t -c user.email=t@example.invalid commit -qm one && "
                      "git log --oneline | wc -l", world.project)
    assert result.exit_code == 0 and result.stdout.strip() == "1", result


def _world_readable(path: Path) -> bool:
    return all(p.stat().st_mode & 0o005 == 0o005 for p in (path, *path.parents))


UNPRIVILEGED = """\
import asyncio, sys
from pathlib import Path
from aimon_core.shell import LocalShell, Sandbox, SandboxConfig, SandboxPaths, probe_sandbox
async def main():
    project = Path(sys.argv[1])
    shell = LocalShell(sandbox=Sandbox(SandboxConfig(paths=SandboxPaths(project=project)),
                                       probe_sandbox()))
    result = await shell.run("id -u; touch inside; python3 -c \\"import socket; "
                             "socket.create_connection(('127.0.0.1', 3128)); print('proxy')\\"",
                             cwd=project, timeout=30)
    await shell.close()
    print(result.stdout, result.stderr, result.exit_code)
asyncio.run(main())
"""


SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists()
                    or not SYSTEM_PYTHON.exists() or not _world_readable(Path(__file__).parent),
                    reason="needs root (to become nobody), setpriv, /usr/bin/python3 and a "
                    "checkout nobody can read")
def test_it_runs_for_an_unprivileged_user() -> None:
    """As a user without capabilities: its own user namespaces, the session's network too.

    The system's Python runs it: a virtual environment's may live where nobody may read.
    """
    import shutil
    import tempfile

    import aimon_core

    # Not pytest's tmp_path: its folders are the test user's alone.
    tmp_path = Path(tempfile.mkdtemp(prefix="aimon-unprivileged-"))
    try:
        _as_nobody(tmp_path, Path(aimon_core.__file__).parent.parent, str(SYSTEM_PYTHON))
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)


def _as_nobody(tmp_path: Path, source: Path, python: str) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    tmp_path.chmod(0o777)
    project.chmod(0o777)
    done = subprocess.run(
        ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python,
         "-c", UNPRIVILEGED, str(project)], capture_output=True, text=True, timeout=60,
        env={**os.environ, "TMPDIR": str(tmp_path), "HOME": str(tmp_path),
             "PYTHONPATH": str(source)}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["65534", "proxy", "0"], done.stdout + done.stderr
    assert (project / "inside").exists()


def test_asking_to_leave_when_the_settings_say_no_runs_inside_and_says_so(
        tmp_path: Path) -> None:
    world = make_world(tmp_path)
    config = SandboxConfig(paths=SandboxPaths(project=world.project), allow_unsandboxed=False)

    result = run_once(LocalShell(sandbox=Sandbox(config, PROBE)), f"touch {world.outside}/left",
                      world.project, sandbox=False)
    assert not (world.outside / "left").exists()
    assert "dangerouslyDisableSandbox was not honoured" in result.stderr


def test_a_server_a_background_job_starts_is_reached_from_the_next_command(
        tmp_path: Path) -> None:
    """The session's commands share one network namespace: a dev server, then its tests."""
    world = make_world(tmp_path)
    (world.project / "index.html").write_text("served\n")
    client = ("python3 -c \"import time, urllib.request as u\nfor _ in range(100):\n"
              "    try:\n        print(u.urlopen('http://127.0.0.1:8765/index.html').read()"
              ".decode()); break\n    except OSError:\n        time.sleep(0.05)\"")

    async def run() -> ShellResult:
        shell = sandboxed_shell(world)
        try:
            job = await shell.start_background(
                "python3 -m http.server 8765 --bind 127.0.0.1", cwd=world.project)
            result = await shell.run(client, cwd=world.project, timeout=30)
            await shell.kill_background(job)
            return result
        finally:
            await shell.close()

    result = asyncio.run(run())
    assert result.stdout.strip() == "served", result
