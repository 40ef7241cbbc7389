"""Networked stores: sessions and their coordination on PostgreSQL and Redis.

The embedded stores (JSONL files, SQLite, the process) stay the default. Where a team runs
aimon on more than one machine, the same protocols are served by engines people already run:

- PostgreSQL (`postgresql://...`, `aimon[postgres]`): session records, leases with fencing,
  the inbox, idempotency keys, and signals (`LISTEN/NOTIFY`).
- Redis (`redis://...`, `aimon[redis]`): leases (`SET NX PX` and a fencing counter), signals
  (pub/sub), the inbox (streams) and idempotency keys, beside PostgreSQL or file records
  (`store.coordination`); or everything, records too (`store.url`).

`open_backend(url)` opens what a URL names (`StoreBackend`); each backend passes the same
contract suites as the embedded stores (`aimon_core.testing`). The drivers are imported only
here, and only when such a URL is opened.
"""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr

if TYPE_CHECKING:
    from aimon_core.stores._backend import (
        CopyMismatchError,
        CopyReport,
        StoreBackend,
        StoreChoice,
        copy_sessions,
        move_inbox,
        open_backend,
        store_url,
    )
    from aimon_core.stores._errors import (
        StoreError,
        StoreSchemaError,
        StoreUnavailableError,
        StoreURLError,
    )
    from aimon_core.stores._pg import PostgresDatabase
    from aimon_core.stores._pg_coordination import (
        PostgresIdempotencyStore,
        PostgresInbox,
        PostgresSessionLeaseStore,
        PostgresSignalBus,
    )
    from aimon_core.stores._pg_records import PostgresSessionRecordStore
    from aimon_core.stores._redis import (
        RedisIdempotencyStore,
        RedisInbox,
        RedisSessionLeaseStore,
        RedisSignalBus,
    )
    from aimon_core.stores._redis_records import RedisSessionRecordStore

_LAZY = {
    "CopyMismatchError": "_backend",
    "CopyReport": "_backend",
    "StoreBackend": "_backend",
    "StoreChoice": "_backend",
    "copy_sessions": "_backend",
    "move_inbox": "_backend",
    "open_backend": "_backend",
    "store_url": "_backend",
    "StoreError": "_errors",
    "StoreSchemaError": "_errors",
    "StoreURLError": "_errors",
    "StoreUnavailableError": "_errors",
    "PostgresDatabase": "_pg",
    "PostgresIdempotencyStore": "_pg_coordination",
    "PostgresInbox": "_pg_coordination",
    "PostgresSessionLeaseStore": "_pg_coordination",
    "PostgresSignalBus": "_pg_coordination",
    "PostgresSessionRecordStore": "_pg_records",
    "RedisIdempotencyStore": "_redis",
    "RedisInbox": "_redis",
    "RedisSessionLeaseStore": "_redis",
    "RedisSignalBus": "_redis",
    "RedisSessionRecordStore": "_redis_records",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "CopyMismatchError",
    "CopyReport",
    "PostgresDatabase",
    "PostgresIdempotencyStore",
    "PostgresInbox",
    "PostgresSessionLeaseStore",
    "PostgresSessionRecordStore",
    "PostgresSignalBus",
    "RedisIdempotencyStore",
    "RedisInbox",
    "RedisSessionLeaseStore",
    "RedisSessionRecordStore",
    "RedisSignalBus",
    "StoreBackend",
    "StoreChoice",
    "StoreError",
    "StoreSchemaError",
    "StoreURLError",
    "StoreUnavailableError",
    "copy_sessions",
    "move_inbox",
    "open_backend",
    "store_url",
]
