"""Coordination on Redis: leases, signals (pub/sub), the inbox (streams), idempotency keys.

Every key starts with `aimon:`. Each multi-step change is one Lua script, so it is atomic on
the server:

- leases: `aimon:lease:<id>` = "<token> <holder>", set only where absent, with an expiry
  (`SET NX PX`), the token from `aimon:fence:<id>` (INCR, never below the clock in
  microseconds, so a flushed Redis still hands out tokens newer than any before); granting
  one raises the fence of a session kept in Redis (`_redis_records.py`), so the previous
  holder's writes are refused from then on;
- the inbox: one stream per session (`aimon:inbox:<id>`), item ids from `aimon:inbox:ids`,
  `aimon:inbox:where` mapping an item to its stream entry; `take` deletes the entry once;
- idempotency: `aimon:key:<scope, key>` = "<done> <claimed at> <outcome>", claimed where absent
  or where its claimer never finished within the hold time; claim times in a sorted set for
  `forget_before`;
- signals: `PUBLISH aimon:signal:<id>`, and the stream `aimon:signals` for buses that
  reconnect; each bus holds one subscriber connection.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import redis

from aimon_core.service import HOLD_SECONDS, InboxItem, Signal, SignalHandler
from aimon_core.session import SessionId, SessionLease, SessionLockedError
from aimon_core.stores._errors import StoreUnavailableError, redacted
from aimon_core.stores._keeper import LeaseKeeper
from aimon_core.stores._listeners import Listeners

log = logging.getLogger(__name__)

DEFAULT_TTL = 15.0
_KEEP = 10_000  # signals kept in the stream for buses that reconnect

_ACQUIRE = """
local held = redis.call('GET', KEYS[1])
if held then return {0, held} end
local token = redis.call('INCR', KEYS[2])
local floor = tonumber(ARGV[3])
if token < floor then redis.call('SET', KEYS[2], ARGV[3]); token = floor end
redis.call('SET', KEYS[1], string.format('%.0f', token) .. ' ' .. ARGV[1], 'PX', ARGV[2])
if redis.call('EXISTS', KEYS[3]) == 1 then
  local fence = tonumber(redis.call('HGET', KEYS[3], 'fence') or '0')
  if token > fence then redis.call('HSET', KEYS[3], 'fence', string.format('%.0f', token)) end
end
return {token, ''}
"""
_RENEW = """
local held = redis.call('GET', KEYS[1])
if held and string.match(held, '^%d+') == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
local held = redis.call('GET', KEYS[1])
if held and string.match(held, '^%d+') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_TAKE = """
local where = redis.call('HGET', KEYS[1], ARGV[1])
if not where then return 0 end
local stream, entry = string.match(where, '^(.*) ([^ ]+)$')
redis.call('HDEL', KEYS[1], ARGV[1])
return redis.call('XDEL', stream, entry)
"""
# A key's value: '<0|1> <claimed at> <outcome JSON>' (1: done).
_CLAIM = """
local held = redis.call('GET', KEYS[1])
if held then
  local done, at, outcome = string.match(held, '^(%d) ([^ ]+) (.*)$')
  if done == '1' or tonumber(at) + tonumber(ARGV[3]) > tonumber(ARGV[2]) then
    return outcome
  end
end
redis.call('SET', KEYS[1], '0 ' .. ARGV[2] .. ' ' .. ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], KEYS[1])
return false
"""
_FINISH = """
local held = redis.call('GET', KEYS[1])
if not held then return 0 end
local at = string.match(held, '^%d ([^ ]+) ')
redis.call('SET', KEYS[1], '1 ' .. at .. ' ' .. ARGV[1])
return 1
"""
_FORGET = """
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
for _, key in ipairs(old) do redis.call('DEL', key) end
if #old > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1]) end
return #old
"""


def connect(url: str) -> redis.Redis:
    """Return a client for a `redis://`, `rediss://` or `redis+unix:///socket` URL."""
    if url.startswith("redis+unix://"):
        url = "unix://" + url.removeprefix("redis+unix://")
    client = redis.Redis.from_url(url, decode_responses=True, socket_connect_timeout=10,
                                  health_check_interval=30)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        raise StoreUnavailableError(redacted(url), str(exc)) from exc
    return client


class RedisSessionLeaseStore:
    """Leases on Redis with an expiry and a fencing counter (see the module docs).

    Args:
        ttl: seconds a lease lives unless renewed.
        renew_every: seconds between renewals (default ttl / 3; 0: never, for tests).
    """

    def __init__(self, client: redis.Redis, *, ttl: float = DEFAULT_TTL,
                 renew_every: float | None = None) -> None:
        self.client = client
        self.ttl = ttl
        self._acquire = client.register_script(_ACQUIRE)
        self._renew_script = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self.keeper = LeaseKeeper(self._renew, name="redis",
                                  every=ttl / 3 if renew_every is None else renew_every)

    def acquire(self, session_id: SessionId, holder: str) -> SessionLease:
        """Take the lease on `session_id`; raise SessionLockedError naming the current holder."""
        token, held = self._acquire(
            keys=[f"aimon:lease:{session_id}", f"aimon:fence:{session_id}",
                  f"aimon:s:{session_id}"],
            args=[holder, int(self.ttl * 1000), time.time_ns() // 1000])
        if int(token) == 0:
            raise SessionLockedError(session_id, str(held).partition(" ")[2] or "another holder")
        token = int(token)
        self.keeper.hold(session_id, token)

        def release() -> None:
            self.keeper.drop(session_id, token)
            self._release(keys=[f"aimon:lease:{session_id}"], args=[token])

        return SessionLease(session_id=session_id, holder=holder, token=token, release=release,
                            newest_token=lambda: self.newest_token(session_id))

    def newest_token(self, session_id: str) -> int | None:
        """Return the newest token handed out for the session (None: never leased)."""
        value = self.client.get(f"aimon:fence:{session_id}")
        return int(str(value)) if value is not None else None

    def _renew(self, session_id: str, token: int) -> bool:
        return bool(self._renew_script(keys=[f"aimon:lease:{session_id}"],
                                       args=[token, int(self.ttl * 1000)]))

    def close(self) -> None:
        """Stop renewing (leases not released expire after `ttl`)."""
        self.keeper.close()


class RedisInbox:
    """A SessionInbox on Redis streams: any node delivers; the holder takes each item once."""

    def __init__(self, client: redis.Redis, clock: Callable[[], float] = time.time) -> None:
        self.client = client
        self._clock = clock
        self._take = client.register_script(_TAKE)

    def deliver(self, session_id: str, text: str, *, sender: str = "") -> InboxItem:
        """Store `text` for the session; return the item."""
        now = self._clock()
        item_id = int(str(self.client.incr("aimon:inbox:ids")))
        stream = f"aimon:inbox:{session_id}"
        entry = self.client.xadd(stream, {"id": item_id, "text": text, "sender": sender,
                                          "at": repr(now)})
        self.client.hset("aimon:inbox:where", str(item_id), f"{stream} {entry!s}")
        return InboxItem(id=item_id, session_id=session_id, text=text, sender=sender,
                         delivered_at=now)

    def pending(self, session_id: str) -> tuple[InboxItem, ...]:
        """Return the session's items not taken yet, oldest first."""
        entries: Any = self.client.xrange(f"aimon:inbox:{session_id}")
        return tuple(InboxItem(id=int(fields["id"]), session_id=session_id,
                               text=fields["text"], sender=fields.get("sender", ""),
                               delivered_at=float(fields.get("at", 0.0)))
                     for _, fields in entries)

    def take(self, item_id: int) -> bool:
        """Mark an item taken; True for the first taker only."""
        return bool(self._take(keys=["aimon:inbox:where"], args=[str(item_id)]))

    def sessions(self) -> tuple[str, ...]:
        """Return the sessions that have items not taken yet."""
        found: dict[str, None] = {}
        for where in self.client.hvals("aimon:inbox:where"):
            stream = str(where).rpartition(" ")[0]
            found[stream.removeprefix("aimon:inbox:")] = None
        return tuple(found)


class RedisIdempotencyStore:
    """An IdempotencyStore on Redis: the first claim of a key wins, on any node."""

    def __init__(self, client: redis.Redis, clock: Callable[[], float] = time.time, *,
                 hold_seconds: float = HOLD_SECONDS) -> None:
        self.client = client
        self._clock = clock
        self._hold = hold_seconds
        self._claim = client.register_script(_CLAIM)
        self._finish = client.register_script(_FINISH)
        self._forget = client.register_script(_FORGET)

    def claim(self, scope: str, key: str, outcome: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
        """Claim `key`; None if first (or its first claim was lost), else what is stored."""
        found = self._claim(keys=[_idempotency_key(scope, key), "aimon:keys"],
                            args=[json.dumps(dict(outcome)), repr(self._clock()), self._hold])
        if found is None:
            return None
        stored = json.loads(str(found))
        return stored if isinstance(stored, dict) else {}

    def finish(self, scope: str, key: str, outcome: Mapping[str, Any]) -> None:
        """Mark the key done with `outcome`."""
        self._finish(keys=[_idempotency_key(scope, key)], args=[json.dumps(dict(outcome))])

    def forget_before(self, moment: float) -> int:
        """Forget keys claimed before `moment`."""
        return int(self._forget(keys=["aimon:keys"], args=[moment]))


def _idempotency_key(scope: str, key: str) -> str:
    return f"aimon:key:{json.dumps([scope, key])}"


class RedisSignalBus:
    """A SignalBus on Redis pub/sub: signals reach the session's holder on any node.

    `publish` returns how many buses subscribe to the session (Redis's count). Subscribing
    and unsubscribing wait for Redis to confirm, so a publish right after sees the change.
    Each signal is also added to the stream `aimon:signals` (the newest `_KEEP` kept): a bus
    whose connection drops subscribes again and delivers the entries it missed, so a signal
    reaches a live holder at least once (after a reconnect, maybe twice).
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._listeners = Listeners()
        self._lock = threading.Lock()
        self._pubsub: Any = None
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._confirmed: dict[tuple[str, str], threading.Event] = {}
        self._seen = "0-0"  # the newest stream entry delivered (or before this bus began)

    def publish(self, session_id: str, signal: Signal) -> int:
        """Send `signal` to the session's listeners; return how many buses heard it."""
        entry = self.client.xadd("aimon:signals", {"session": session_id,
                                                   "signal": signal.value},
                                 maxlen=_KEEP, approximate=True)
        return int(str(self.client.publish(f"aimon:signal:{session_id}",
                                           f"{signal.value} {entry!s}")))

    def subscribe(self, session_id: str, handler: SignalHandler) -> Callable[[], None]:
        """Call `handler` (on the bus's thread) with each signal for the session."""
        channel = f"aimon:signal:{session_id}"
        if self._listeners.add(session_id, handler):
            self._change("subscribe", channel)

        def unsubscribe() -> None:
            if self._listeners.remove(session_id, handler):
                self._change("unsubscribe", channel)

        return unsubscribe

    def _change(self, kind: str, channel: str) -> None:
        confirmed = threading.Event()
        with self._lock:
            self._confirmed[(kind, channel)] = confirmed
            if self._pubsub is None:
                newest: Any = self.client.xrevrange("aimon:signals", count=1)
                self._seen = str(newest[0][0]) if newest else "0-0"  # hear from now on
                self._pubsub = self.client.pubsub()  # type: ignore[no-untyped-call]
            pubsub = self._pubsub
            getattr(pubsub, kind)(channel)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, args=(pubsub,), daemon=True,
                                                name="aimon signals (redis)")
                self._thread.start()
        if not confirmed.wait(timeout=10):
            log.warning("redis did not confirm %s of %s", kind, channel)

    def _run(self, pubsub: Any) -> None:
        delay, lost = 0.1, False
        while not self._closed.is_set():
            try:
                if lost:  # redis-py connects and subscribes again on this call
                    self._catch_up(pubsub)
                    delay, lost = 0.1, False
                message = pubsub.get_message(timeout=0.25)
            except (redis.RedisError, OSError, ValueError) as exc:
                if self._closed.is_set():
                    return
                log.warning("the signal bus lost its connection (%s): connecting again", exc)
                lost = True
                self._closed.wait(delay)
                delay = min(delay * 2, 5.0)
                continue
            if message is not None:
                self._received(message)

    def _received(self, message: Mapping[str, Any]) -> None:
        kind, channel = str(message["type"]), str(message["channel"])
        if kind in ("subscribe", "unsubscribe"):
            with self._lock:
                event = self._confirmed.pop((kind, channel), None)
            if event is not None:
                event.set()
        elif kind == "message":
            signal, _, entry = str(message["data"]).partition(" ")
            self._deliver(channel.removeprefix("aimon:signal:"), signal, entry)

    def _catch_up(self, pubsub: Any) -> None:
        """Subscribe again, then deliver the signals sent while the connection was down."""
        pubsub.ping()  # connects; redis-py subscribes the channels it had again
        missed: Any = self.client.xrange("aimon:signals", min=f"({self._seen}")
        for entry, fields in missed:
            session_id = str(fields.get("session", ""))
            if session_id in self._listeners.sessions():
                self._deliver(session_id, str(fields.get("signal", "")), str(entry))

    def _deliver(self, session_id: str, data: str, entry: str = "") -> None:
        if entry:
            self._seen = entry
        try:
            signal = Signal(data)
        except ValueError:
            log.warning("ignored a signal that is not aimon's: %r", data[:200])
            return
        self._listeners.deliver(session_id, signal)

    def close(self) -> None:
        """Stop listening."""
        self._closed.set()
        with self._lock:
            thread, self._thread = self._thread, None
            pubsub, self._pubsub = self._pubsub, None
        self._listeners.clear()
        if thread is not None:
            thread.join(timeout=10)
        if pubsub is not None:
            pubsub.close()
