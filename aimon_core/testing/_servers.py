"""Real PostgreSQL and Redis servers for tests and benchmarks, in a temporary folder.

Each listens on a unix socket only (no TCP port, so nothing on the machine can reach it but
its owner and root), keeps its data in the folder, and is stopped and removed by `stop()`.
PostgreSQL refuses to run as root: as root, its folder is given to the `postgres` user (made
by Debian's package) or to `nobody`, and the server runs as that user.

    server = start_postgres()        # None (with `missing_reason()`) when not installed
    url = server.url                 # postgresql://aimon@/aimon?host=/tmp/.../socket
    ...
    server.stop()
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True, kw_only=True)
class RunningServer:
    """A server started for tests: where it listens, and how to stop it."""

    name: str
    url: str
    folder: Path
    process: subprocess.Popen[bytes] | None = None
    run_as: str | None = None

    def stop(self) -> None:
        """Stop the server at once and remove its folder."""
        if self.name == "postgresql":
            _run_as(self.run_as, [_pg_binary("pg_ctl"), "stop", "-D",
                                  str(self.folder / "data"), "-m", "immediate", "-w"],
                    check=False)
        elif self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _pg_binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"), reverse=True)
    return str(candidates[0]) if candidates else name


def postgres_missing() -> str | None:
    """Return why PostgreSQL cannot be started here (None: it can)."""
    for name in ("initdb", "pg_ctl", "postgres"):
        if not Path(_pg_binary(name)).is_file():
            return (f"PostgreSQL's {name} is not installed (Debian: apt-get install "
                    "postgresql); .ci/run installs it")
    return None


def redis_missing() -> str | None:
    """Return why Redis cannot be started here (None: it can)."""
    if shutil.which("redis-server") is None:
        return "redis-server is not installed (Debian: apt-get install redis-server); " \
            ".ci/run installs it"
    return None


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise RuntimeError("PostgreSQL cannot run as root and no other user exists")


def _run_as(user: str | None, argv: list[str], *, check: bool = True
            ) -> subprocess.CompletedProcess[bytes]:
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, check=check, capture_output=True, timeout=120)


def start_postgres(*, durable: bool = False) -> RunningServer:
    """Start a PostgreSQL server in a new temporary folder; return it once it takes
    connections.

    Args:
        durable: fsync as a real server does (benchmarks); tests leave it off, since what
            they check does not depend on the disk.
    """
    user = _server_user()
    folder = Path(tempfile.mkdtemp(prefix="aimon-pg-"))
    if user is not None:
        folder.chmod(0o755)
        entry = pwd.getpwnam(user)
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    data = folder / "data"
    try:
        _run_as(user, [_pg_binary("initdb"), "-D", str(data), "-U", "aimon", "--auth=trust",
                       "-E", "UTF8", "--no-sync", "--no-instructions"])
        options = f"-k {folder} -c listen_addresses='' -c max_connections=60"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        _run_as(user, [_pg_binary("pg_ctl"), "start", "-w", "-t", "60", "-D", str(data),
                       "-l", str(folder / "log"), "-o", options])
        _run_as(user, [_pg_binary("createdb") if Path(_pg_binary("createdb")).is_file()
                       else "createdb", "-h", str(folder), "-U", "aimon", "aimon"])
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log = (folder / "log").read_text(errors="replace") if (folder / "log").exists() else ""
        shutil.rmtree(folder, ignore_errors=True)
        stderr = getattr(exc, "stderr", b"") or b""
        raise RuntimeError(f"PostgreSQL did not start: {exc}\n{stderr.decode(errors='replace')}"
                           f"\n{log}") from exc
    return RunningServer(name="postgresql", url=f"postgresql://aimon@/aimon?host={folder}",
                         folder=folder, run_as=user)


def start_redis(*, durable: bool = False) -> RunningServer:
    """Start a redis-server in a new temporary folder; return it once it answers.

    Args:
        durable: append every write to its log and fsync it before answering
            (`appendfsync always`), for benchmarks against stores that fsync; tests keep
            nothing on disk.
    """
    folder = Path(tempfile.mkdtemp(prefix="aimon-redis-"))
    sock = folder / "redis.sock"
    keeping = ["--appendonly", "yes", "--appendfsync", "always"] if durable else \
        ["--appendonly", "no"]
    process = subprocess.Popen(
        ["redis-server", "--port", "0", "--unixsocket", str(sock), "--unixsocketperm", "700",
         "--save", "", *keeping, "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not _answers(sock):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            shutil.rmtree(folder, ignore_errors=True)
            raise RuntimeError("redis-server did not start")
        time.sleep(0.01)  # polling its socket: redis tells no one when it is ready
    return RunningServer(name="redis", url=f"redis+unix://{sock}", folder=folder, process=process)


def _answers(sock: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(1.0)
            s.connect(str(sock))
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False
