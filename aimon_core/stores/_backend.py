"""Choosing and opening a store: a URL names the backend, the embedded one is the default.

    --store URL  >  AIMON_STORE_URL  >  {"store": {"url": ...}} in the user's settings.json

- no URL, or `file:` / `file:///folder`: the embedded stores (JSONL sessions and flock leases
  under aimon's data folder; the service's SQLite inbox and keys).
- `postgresql://...` (or `postgres://`): everything in that database.
- `redis://...`, `rediss://...`, `redis+unix:///socket`: everything in Redis (records too);
  or, as `{"store": {"coordination": URL}}` (or `AIMON_STORE_COORDINATION`) beside a
  PostgreSQL or file `url`, only the coordination (leases, signals, inbox, keys) on Redis.

`leaseSeconds` (or AIMON_STORE_LEASE_SECONDS) sets how long a networked lease lives unless
its holder renews it: a dead holder's sessions are free after that long (default 15).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.stores._errors import StoreURLError, redacted

if TYPE_CHECKING:
    from aimon_core.service import ServiceStores, SessionInbox
    from aimon_core.session import SessionRecordStore, SessionStore

ENV_URL = "AIMON_STORE_URL"
ENV_COORDINATION = "AIMON_STORE_COORDINATION"
ENV_LEASE_SECONDS = "AIMON_STORE_LEASE_SECONDS"
_POSTGRES = ("postgresql://", "postgres://")
_REDIS = ("redis://", "rediss://", "redis+unix://")


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreChoice:
    """Which backends hold records and coordination (None: the embedded ones)."""

    url: str | None = None
    coordination: str | None = None
    lease_seconds: float | None = None  # a networked lease's life unless renewed (15 s)
    problems: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """Describe the choice, passwords hidden (for messages and `aimon store info`)."""
        text = redacted(self.url) if self.url not in (None, "", "file:") else "file (embedded)"
        return text + (f" + {redacted(self.coordination)}" if self.coordination else "")


def store_url(flag: str | None = None, *, environ: Mapping[str, str] | None = None,
              settings_path: Path | None = None) -> StoreChoice:
    """Return the store chosen by the flag, the environment or the user's settings."""
    env = os.environ if environ is None else environ
    block, problems = _settings_block(settings_path)
    url = flag or env.get(ENV_URL) or _text(block, "url", problems)
    coordination = env.get(ENV_COORDINATION) or _text(block, "coordination", problems)
    lease = _seconds(env.get(ENV_LEASE_SECONDS), problems) if env.get(ENV_LEASE_SECONDS) \
        else _seconds(block.get("leaseSeconds"), problems)
    return StoreChoice(url=url or None, coordination=coordination or None,
                       lease_seconds=lease, problems=tuple(problems))


def _seconds(value: object, problems: list[str]) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        seconds = -1.0
    if isinstance(value, bool) or not 0.2 <= seconds <= 3600:
        problems.append("store.leaseSeconds must be a number of seconds from 0.2 to 3600")
        return None
    return seconds


def _settings_block(path: Path | None) -> tuple[Mapping[str, Any], list[str]]:
    if path is None:
        from aimon_core.session import user_config_dir

        path = user_config_dir() / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, []
    except (OSError, ValueError) as exc:
        return {}, [f"{path}: not read ({exc}); the embedded store is used"]
    block = data.get("store") if isinstance(data, dict) else None
    if block is None:
        return {}, []
    if not isinstance(block, dict):
        return {}, [f"{path}: store must be an object"]
    problems = [f"{path}: store.{key}: unknown key" for key in block
                if key not in ("url", "coordination", "leaseSeconds")]
    return block, problems


def _text(block: Mapping[str, Any], key: str, problems: list[str]) -> str | None:
    value = block.get(key)
    if value is None or isinstance(value, str):
        return value
    problems.append(f"store.{key} must be a URL string")
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreBackend:
    """An opened store: sessions (records and leases) and the service's stores.

    `service` is None for the embedded backend (the service keeps its SQLite file). Whoever
    opened it closes it (`close`): pools, listener connections and lease renewals end.
    """

    name: str
    store: SessionStore
    service: ServiceStores | None = None
    closers: tuple[Callable[[], None], ...] = field(default=(), repr=False)

    def close(self) -> None:
        """Close connections and stop renewing leases (leases not released then expire)."""
        for close in reversed(self.closers):
            close()


def open_backend(choice: StoreChoice | str | None = None, *, data_dir: Path | None = None,
                 lease_seconds: float | None = None) -> StoreBackend:
    """Open the backends a choice (or a URL) names; raise StoreURLError for an unknown one.

    Args:
        data_dir: the embedded store's folder (default: aimon's data folder).
        lease_seconds: how long a networked lease lives unless renewed (default 15).
    """
    if not isinstance(choice, StoreChoice):
        choice = StoreChoice(url=choice)
    url, coordination = choice.url, choice.coordination
    lease_seconds = lease_seconds or choice.lease_seconds
    closers: list[Callable[[], None]] = []
    try:
        if url is not None and url.startswith(_REDIS):
            records, leases, service = _open_redis(url, lease_seconds, closers, records=True)
            if coordination not in (None, url):
                raise StoreURLError(redacted(coordination or ""), "Redis records keep their "
                                    "coordination in the same Redis")
        else:
            records, leases, service = _open_records(url, data_dir, lease_seconds, closers)
        if coordination is not None and not (url or "").startswith(_REDIS):
            _, leases, service = _open_redis(coordination, lease_seconds, closers)
        from aimon_core.session import SessionStore

        return StoreBackend(name=choice.name, store=SessionStore(records, leases),
                            service=service, closers=tuple(closers))
    except BaseException:
        for close in reversed(closers):
            close()
        raise


def _open_records(url: str | None, data_dir: Path | None, lease_seconds: float | None,
                  closers: list[Callable[[], None]]) -> tuple[Any, Any, Any]:
    if url is None or url == "file:" or url.startswith("file://"):
        from aimon_core.session import (
            FileSessionLeaseStore,
            FileSessionRecordStore,
            user_data_dir,
        )

        base = Path(url.removeprefix("file://")) if url and url.startswith("file://") and \
            len(url) > len("file://") else (data_dir or user_data_dir())
        return FileSessionRecordStore(base), FileSessionLeaseStore(base), None
    if url.startswith(_POSTGRES):
        return _open_postgres(url, lease_seconds, closers)
    raise StoreURLError(redacted(url), "aimon keeps sessions in postgresql://, redis:// "
                        "or file: stores")


def _open_postgres(url: str, lease_seconds: float | None, closers: list[Callable[[], None]]
                   ) -> tuple[Any, Any, Any]:
    from aimon_core.service import ServiceStores
    from aimon_core.stores._pg import PostgresDatabase
    from aimon_core.stores._pg_coordination import (
        DEFAULT_TTL,
        PostgresIdempotencyStore,
        PostgresInbox,
        PostgresSessionLeaseStore,
        PostgresSignalBus,
    )
    from aimon_core.stores._pg_records import PostgresSessionRecordStore

    database = PostgresDatabase(url)
    closers.append(database.close)
    database.open()  # now, so that a bad URL fails here and not at the first write
    leases = PostgresSessionLeaseStore(database, ttl=lease_seconds or DEFAULT_TTL)
    closers.append(leases.close)
    signals = PostgresSignalBus(database)
    closers.append(signals.close)
    service = ServiceStores(inbox=PostgresInbox(database),
                            idempotency=PostgresIdempotencyStore(database), signals=signals)
    return PostgresSessionRecordStore(database), leases, service


def _open_redis(url: str, lease_seconds: float | None, closers: list[Callable[[], None]],
                *, records: bool = False) -> tuple[Any, Any, Any]:
    if not url.startswith(_REDIS):
        raise StoreURLError(redacted(url), "coordination is on redis:// (or the records' "
                            "own database)")
    from aimon_core.service import ServiceStores
    from aimon_core.stores._redis import (
        DEFAULT_TTL,
        RedisIdempotencyStore,
        RedisInbox,
        RedisSessionLeaseStore,
        RedisSignalBus,
        connect,
    )

    client = connect(url)
    closers.append(client.close)
    leases = RedisSessionLeaseStore(client, ttl=lease_seconds or DEFAULT_TTL)
    closers.append(leases.close)
    signals = RedisSignalBus(client)
    closers.append(signals.close)
    service = ServiceStores(inbox=RedisInbox(client), idempotency=RedisIdempotencyStore(client),
                            signals=signals)
    if not records:
        return None, leases, service
    from aimon_core.stores._redis_records import RedisSessionRecordStore

    return RedisSessionRecordStore(client), leases, service


def move_inbox(source: SessionInbox, target: SessionInbox) -> int:
    """Move every item not taken yet from one inbox to another; return how many.

    Each item is taken from `source` first (at most once, so a service still running there
    cannot also run it), then delivered to `target`, oldest first.
    """
    moved = 0
    for session_id in source.sessions():
        for item in source.pending(session_id):
            if source.take(item.id):
                target.deliver(session_id, item.text, sender=item.sender)
                moved += 1
    return moved


@dataclass(frozen=True, slots=True, kw_only=True)
class CopyReport:
    """What `copy_sessions` copied and checked."""

    copied: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # already in the target, equal to the source
    messages: int = 0


class CopyMismatchError(RuntimeError):
    """A session read back from the target differs from the source."""

    def __init__(self, session_id: str, what: str) -> None:
        super().__init__(f"session {session_id!r} differs after the copy: {what}")
        self.session_id = session_id


def copy_sessions(source: SessionRecordStore, target: SessionRecordStore, *,
                  on_copied: Callable[[str], None] = lambda _: None) -> CopyReport:
    """Copy every session of `source` into `target`, and check each by reading it back.

    A session already in the target is skipped when it is equal, refused when it differs
    (SessionExistsError); a copy that reads back different raises CopyMismatchError.
    """
    from aimon_core.session import SessionExistsError

    copied: list[str] = []
    skipped: list[str] = []
    messages = 0
    summaries = source.list_sessions(None, limit=2**31 - 1)
    for summary in reversed(summaries):  # oldest first: the target lists them alike
        record = dataclasses.replace(source.load(summary.id), load_warnings=())
        try:
            target.create(record)
        except SessionExistsError:
            if _comparable(target.load(record.id)) != _comparable(record):
                raise
            skipped.append(record.id)
            continue
        back = target.load(record.id)
        if _comparable(back) != _comparable(record):
            raise CopyMismatchError(record.id, _difference(back, record))
        copied.append(record.id)
        messages += len(record.transcript)
        on_copied(record.id)
    return CopyReport(copied=tuple(copied), skipped=tuple(skipped), messages=messages)


def _comparable(record: Any) -> Any:
    return dataclasses.replace(record, load_warnings=())


def _difference(back: Any, record: Any) -> str:
    for item in dataclasses.fields(record):
        if getattr(back, item.name) != getattr(record, item.name):
            return f"{item.name} is not the same"
    return "unknown"
