"""Test-wide setup: no provider keys, an isolated AIMON_HOME."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# With PYTHONDONTWRITEBYTECODE=1 (set here and on CI machines) pytest rewrites the asserts of
# every test module again in every xdist worker: ~3.4 CPU-s per worker and run. Let it keep
# the rewritten modules in __pycache__ (git-ignored): the next run in this checkout loads them.
sys.dont_write_bytecode = False

_PROVIDER_VARS = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY",
    "OPENAI_BASE_URL", "OPENAI_ORG_ID", "AIMON_PROVIDER", "AIMON_MODEL",
)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[None]:
    for name in _PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    # pytest-xdist workers export COLUMNS=80 and LINES=24, which rich and prompt-toolkit
    # prefer to the size of the pseudo-terminal a test gives `aimon`: never pass them on.
    for name in ("COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)
    # The store is the embedded one unless a test chooses another.
    for name in ("AIMON_STORE_URL", "AIMON_STORE_COORDINATION"):
        monkeypatch.delenv(name, raising=False)
    home: Path = tmp_path_factory.mktemp("aimon-home")
    monkeypatch.setenv("AIMON_HOME", str(home))
    # Claude Code's user settings (~/.claude) are read too: never the real user's.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / "claude"))
    # `keyring` never reaches the real user's keyring: stored keys go to the 0600 file (a test
    # of the keyring path hands the store a keyring of its own).
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    yield


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile aimon once, as `pip install` does, before any test starts `aimon`.

    CI machines set PYTHONDONTWRITEBYTECODE=1, so every `aimon` a test starts (hundreds) would
    compile aimon's sources again: about 0.15 s of CPU each. Compiled once here, they only
    load. (Each xdist worker runs this too; compiling is atomic and the second finds it done.)
    """
    import compileall

    import aimon_cli
    import aimon_core

    for package in (aimon_core, aimon_cli):
        compileall.compile_dir(str(Path(package.__file__).parent), quiet=1)


# Real servers for the store tests (tests/stores, tests/scheduling): one PostgreSQL and one
# Redis per test session (worker), started on first use in a temporary folder and stopped at
# the end; a test that needs one is skipped, with the reason, only where the server's
# programs are not installed (.ci/run installs them).
@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    from aimon_core.testing._servers import postgres_missing, start_postgres

    reason = postgres_missing()
    if reason is not None:
        pytest.skip(reason)
    server = start_postgres()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    from aimon_core.testing._servers import redis_missing, start_redis

    reason = redis_missing()
    if reason is not None:
        pytest.skip(reason)
    server = start_redis()
    try:
        yield server.url
    finally:
        server.stop()
