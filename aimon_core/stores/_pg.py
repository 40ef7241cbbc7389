"""PostgreSQL: one connection pool per database, and aimon's schema, versioned and migrated.

psycopg and psycopg-pool are imported here and in the other `_pg_*` modules only, and only
when a `postgresql://` store is opened (`aimon[postgres]`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from aimon_core.stores._errors import StoreSchemaError, StoreUnavailableError, redacted

# Each migration brings the schema from version N to N + 1; the version is kept in
# aimon_schema. Never edit one that has shipped: add the next.
MIGRATIONS: tuple[str, ...] = (
    # 1: sessions (messages as append-only rows, the side record with a version, snapshots),
    #    leases with fencing tokens (one sequence, so a token is never given twice), the
    #    inbox, idempotency keys, signals (kept a while, for listeners that reconnect) and
    #    who listens for each session's signals.
    """
    CREATE TABLE aimon_sessions (
        id text PRIMARY KEY,
        project_root text NOT NULL,
        agent_ref text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        title text NOT NULL DEFAULT '',
        next_seq bigint NOT NULL DEFAULT 0,
        message_count bigint NOT NULL DEFAULT 0,
        snapshot_seq bigint,
        side text,
        side_version bigint NOT NULL DEFAULT 0,
        started text NOT NULL DEFAULT '[]',
        fence bigint NOT NULL DEFAULT 0);
    CREATE INDEX aimon_sessions_listing ON aimon_sessions (project_root, updated_at DESC);
    CREATE INDEX aimon_sessions_recent ON aimon_sessions (updated_at DESC);
    CREATE TABLE aimon_messages (
        session_id text NOT NULL REFERENCES aimon_sessions (id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (session_id, seq));
    CREATE TABLE aimon_snapshots (
        session_id text NOT NULL REFERENCES aimon_sessions (id) ON DELETE CASCADE,
        seq bigint NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (session_id, seq));
    CREATE TABLE aimon_leases (
        session_id text PRIMARY KEY,
        holder text NOT NULL,
        token bigint NOT NULL,
        expires_at timestamptz NOT NULL);
    CREATE TABLE aimon_inbox (
        id bigserial PRIMARY KEY,
        session_id text NOT NULL,
        text text NOT NULL,
        sender text NOT NULL DEFAULT '',
        delivered_at double precision NOT NULL,
        taken_at double precision);
    CREATE INDEX aimon_inbox_pending ON aimon_inbox (session_id, id) WHERE taken_at IS NULL;
    CREATE TABLE aimon_idempotency (
        scope text NOT NULL,
        key text NOT NULL,
        claimed_at double precision NOT NULL,
        outcome text NOT NULL DEFAULT '{}',
        done boolean NOT NULL DEFAULT false,
        PRIMARY KEY (scope, key));
    CREATE INDEX aimon_idempotency_age ON aimon_idempotency (claimed_at);
    CREATE SEQUENCE aimon_fence;
    CREATE TABLE aimon_signals (
        id bigserial PRIMARY KEY,
        session_id text NOT NULL,
        signal text NOT NULL,
        sent_at timestamptz NOT NULL DEFAULT now());
    CREATE TABLE aimon_listeners (
        backend_pid integer NOT NULL,
        session_id text NOT NULL,
        PRIMARY KEY (backend_pid, session_id));
    """,
)
SCHEMA_VERSION = len(MIGRATIONS)
# Taken (per transaction) while the schema is checked and migrated: two aimons starting at
# once against a new database migrate it once.
_MIGRATION_LOCK = 0x61696D6F6E  # "aimon"


class PostgresDatabase:
    """A database aimon keeps its stores in: a connection pool, the schema checked once.

    Args:
        url: a libpq URL (`postgresql://user@host/db`, `postgresql://u@/db?host=/socket`).
        max_connections: the pool's size; the signal bus has one more connection of its own.
    """

    def __init__(self, url: str, *, max_connections: int = 4) -> None:
        self.url = url
        self.name = redacted(url)
        self._max = max_connections
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()

    @property
    def pool(self) -> ConnectionPool:
        """Return the pool, opened (and the schema migrated) on first use."""
        with self._lock:
            if self._pool is None:
                # One plain connection first: a wrong URL or a server that is down fails at
                # once with libpq's own words (a pool would retry until its timeout).
                try:
                    with psycopg.connect(self.url, autocommit=True,
                                         connect_timeout=10) as connection:
                        migrate(connection)
                except psycopg.Error as exc:
                    raise StoreUnavailableError(self.name, str(exc).strip()) from exc
                pool = ConnectionPool(self.url, min_size=1, max_size=self._max, open=False,
                                      kwargs={"autocommit": True}, name="aimon")
                try:
                    pool.open(wait=True, timeout=10.0)
                except Exception as exc:  # psycopg.Error, or psycopg_pool's PoolTimeout
                    pool.close()
                    raise StoreUnavailableError(self.name, str(exc)) from exc
                self._pool = pool
            return self._pool

    def open(self) -> None:
        """Open the pool and migrate the schema now (else on first use)."""
        _ = self.pool

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """Lend a connection of the pool (autocommit; open a transaction for more)."""
        try:
            with self.pool.connection() as connection:
                yield connection
        except psycopg.OperationalError as exc:
            raise StoreUnavailableError(self.name, str(exc)) from exc

    def connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        """Open a connection outside the pool (the signal bus listens on one)."""
        try:
            return psycopg.connect(self.url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreUnavailableError(self.name, str(exc)) from exc

    def close(self) -> None:
        """Close the pool's connections."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


def schema_version(connection: psycopg.Connection[tuple[Any, ...]]) -> int:
    """Return the version of aimon's schema in the database (0: none yet)."""
    found = connection.execute("SELECT to_regclass('aimon_schema') IS NOT NULL").fetchone()
    if not found or not found[0]:
        return 0
    row = connection.execute("SELECT version FROM aimon_schema").fetchone()
    return int(str(row[0])) if row else 0


def migrate(connection: psycopg.Connection[tuple[Any, ...]]) -> int:
    """Bring aimon's schema to SCHEMA_VERSION; return the version it had.

    Raises StoreSchemaError when the database was made by a newer aimon.
    """
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        version = schema_version(connection)
        if version > SCHEMA_VERSION:
            raise StoreSchemaError(
                f"the database's aimon schema is version {version}, newer than this aimon's "
                f"({SCHEMA_VERSION}): upgrade aimon")
        if version == 0:
            connection.execute("CREATE TABLE aimon_schema (version integer NOT NULL)")
            connection.execute("INSERT INTO aimon_schema VALUES (0)")
        for number in range(version, SCHEMA_VERSION):
            connection.execute(MIGRATIONS[number].encode())
            connection.execute("UPDATE aimon_schema SET version = %s", (number + 1,))
    return version
