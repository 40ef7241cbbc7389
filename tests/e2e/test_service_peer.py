"""The service's socket refuses every uid but the user's: by its folder, and by SO_PEERCRED.

A client runs as another user (`setpriv` to nobody) against a service of its own, in a
folder others may traverse: first the service folder (0700) keeps it out; then, with the
folder and the socket opened to everyone (a mistake of permissions), the service still
closes the connection before reading a byte, because the peer's uid is not the user's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import AIMON

NOBODY = 65534
PROBE = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print("refused by the file system:", exc.errno)
    sys.exit(0)
s.settimeout(30)
try:
    s.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocol": 1}}\n')
    answer = s.recv(4096)
except (BrokenPipeError, ConnectionResetError):
    answer = b""  # closed before the request was written
print("answer:", repr(answer))
"""

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None or not Path("/usr/bin/python3").exists(),
    reason="running a client as another user needs root, setpriv and /usr/bin/python3")


@pytest.fixture
def home() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="aimon-peer-", dir="/tmp"))
    folder.chmod(0o711)
    (folder / "data").mkdir(mode=0o711)
    (folder / "data").chmod(0o711)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def as_nobody(socket_path: Path) -> str:
    done = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         "/usr/bin/python3", "-c", PROBE, str(socket_path)],
        capture_output=True, text=True, timeout=60, check=False, cwd="/")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_another_uid_cannot_use_the_socket(home: Path) -> None:
    env = {**os.environ, "AIMON_HOME": str(home)}
    read_end, write_end = os.pipe()
    serve = subprocess.Popen([AIMON, "serve", "--ready-fd", str(write_end)], env=env,
                             pass_fds=(write_end,), stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as ready:
            assert ready.read() == b"ready\n"  # it listens (end of file: it failed)
        folder, sock = home / "data" / "service", home / "data" / "service" / "aimon.sock"
        assert as_nobody(sock) == "refused by the file system: 13"  # EACCES: the 0700 folder
        folder.chmod(0o711)
        sock.chmod(0o666)
        assert as_nobody(sock) == "answer: b''"  # connected, closed unanswered
        with subprocess.Popen([AIMON, "ps", "--json"], env=env, stdout=subprocess.PIPE,
                              text=True) as ps:
            assert '"service": true' in ps.communicate(timeout=60)[0]  # the user still is
    finally:
        subprocess.run([AIMON, "serve", "--stop"], env=env, capture_output=True, timeout=60,
                       check=False)
        _, log = serve.communicate(timeout=60)
    assert "refused a connection from uid 65534" in log
