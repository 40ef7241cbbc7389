"""The service leaves by itself after its idle time with no client and nothing to do."""

from __future__ import annotations

import os
import subprocess

import pytest

from aimon_core.service import ServiceClient, ServicePaths

from .conftest import AIMON


def test_the_service_leaves_when_idle(tmp_path_factory: pytest.TempPathFactory) -> None:
    # A short folder: the socket path must fit a unix socket's 107 bytes under any TMPDIR.
    tmp_path = tmp_path_factory.mktemp("idle")
    env = {**os.environ, "AIMON_HOME": str(tmp_path)}
    read_end, write_end = os.pipe()
    serve = subprocess.Popen([AIMON, "serve", "--idle-minutes", "0.01", "--ready-fd",
                              str(write_end)], env=env, pass_fds=(write_end,),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as ready:
        assert ready.read() == b"ready\n"
    paths = ServicePaths(folder=tmp_path / "data" / "service")
    with ServiceClient.connect(paths) as client:
        assert client.call("service/status")["idle_seconds"] == 0.6
    _, log = serve.communicate(timeout=60)  # the client gone, it leaves by itself
    assert serve.returncode == 0
    assert "idle for 1 s: leaving" in log
    assert not paths.socket.exists()
