"""Real servers for the store tests: one PostgreSQL and one Redis per test session (worker).

Each is started on first use in a temporary folder and stopped at the end; a test that needs
one is skipped, with the reason, only where the server's programs are not installed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aimon_core.testing._servers import (
    postgres_missing,
    redis_missing,
    start_postgres,
    start_redis,
)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
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
    reason = redis_missing()
    if reason is not None:
        pytest.skip(reason)
    server = start_redis()
    try:
        yield server.url
    finally:
        server.stop()
