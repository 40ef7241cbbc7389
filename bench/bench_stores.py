"""Session stores compared: the file store, PostgreSQL (with or without Redis leases), Redis.

Run:  python bench/bench_stores.py [--messages 10000] [--appends 300] [--claims 200]

Starts its own PostgreSQL and redis-server in a temporary folder (unix sockets, as the tests
do; both durable here, as the file store is at a turn boundary: PostgreSQL with fsync on,
Redis with `appendfsync always`) and measures, per backend:

- append: one message per call, `sync=True` (a turn boundary), median and p95 latency, and
  the throughput of that loop;
- batch append: messages per second appending 50 at a time;
- resume: loading a session of `--messages` messages (median of 5);
- claim: `SessionStore.claim` of a stored session and `release` (median, p95); a claim
  loads the record, here the `--appends` messages of the first measurement.

The machine is shared: each number is a median of repeated runs, and the table says how
many. Messages are a user question, an assistant answer with a tool call, and its result,
about 600 bytes encoded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from aimon_core.llm import Message, TextBlock, ToolResultBlock, ToolUseBlock
from aimon_core.session import SessionRecord, SessionStore
from aimon_core.stores import StoreChoice, open_backend
from aimon_core.testing._servers import (
    postgres_missing,
    redis_missing,
    start_postgres,
    start_redis,
)


def _messages(n: int) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        match i % 3:
            case 0:
                out.append(Message.user(f"question {i}: why does test_parse fail on line {i}?"))
            case 1:
                out.append(Message(role="assistant", content=(
                    TextBlock(text="Let me read the parser first. " * 4),
                    ToolUseBlock(id=f"call_{i}", name="Read",
                                 input={"file_path": f"/work/src/parser_{i}.py"}))))
            case _:
                out.append(Message(role="user", content=(ToolResultBlock(
                    tool_use_id=f"call_{i - 1}", content=(TextBlock(
                        text="def parse(text):\n    return text.split()\n" * 5),)),)))
    return out


def _ms(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    return statistics.median(ordered) * 1000, p95 * 1000


def _timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure(name: str, store: SessionStore, args: argparse.Namespace) -> dict[str, str]:
    """Return the row of one backend."""
    records = store.records
    project = "/bench/project"
    record = SessionRecord.new(project_root=project, agent_ref="default")
    records.create(record)
    one = _messages(3)
    appends = [_timed(lambda n=n: records.append(record.id, [one[n % 3]], sync=True))
               for n in range(args.appends)]
    append_median, append_p95 = _ms(appends)
    throughput = len(appends) / sum(appends)

    batch = _messages(50)
    big = SessionRecord.new(project_root=project, agent_ref="default")
    records.create(big)
    spent = 0.0
    for _ in range(args.messages // 50):
        spent += _timed(lambda: records.append(big.id, batch))
    batch_rate = (args.messages // 50) * 50 / spent

    loads = [_timed(lambda: records.load(big.id)) for _ in range(5)]
    assert len(records.load(big.id).transcript) == (args.messages // 50) * 50

    claims: list[float] = []
    for _ in range(args.claims):
        start = time.perf_counter()
        claimed = store.claim(record.id, project_root=project, agent_ref="default")
        store.release(claimed)
        claims.append(time.perf_counter() - start)
    claim_median, claim_p95 = _ms(claims)
    return {
        "backend": name,
        "append ms (median / p95)": f"{append_median:.2f} / {append_p95:.2f}",
        "appends/s (sync)": f"{throughput:.0f}",
        "messages/s (batches of 50)": f"{batch_rate:.0f}",
        f"resume {args.messages} msgs, ms": f"{statistics.median(loads) * 1000:.0f}",
        "claim+release ms (median / p95)": f"{claim_median:.2f} / {claim_p95:.2f}",
    }


@contextmanager
def servers() -> Iterator[tuple[str | None, str | None]]:
    """Start PostgreSQL and Redis where installed; yield their URLs (None: not installed)."""
    pg = None if postgres_missing() else start_postgres(durable=True)
    redis = None if redis_missing() else start_redis(durable=True)
    try:
        yield (pg.url if pg else None), (redis.url if redis else None)
    finally:
        for server in (pg, redis):
            if server is not None:
                server.stop()


def main() -> None:
    """Measure each backend and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--claims", type=int, default=200)
    args = parser.parse_args()
    rows = []
    with servers() as (pg, redis), tempfile.TemporaryDirectory() as folder:
        choices: list[tuple[str, StoreChoice | None]] = [("file (embedded)", None)]
        if pg:
            choices.append(("PostgreSQL", StoreChoice(url=pg)))
            if redis:
                choices.append(("PostgreSQL + Redis leases",
                                StoreChoice(url=pg, coordination=redis)))
        if redis:
            choices.append(("Redis (everything)", StoreChoice(url=redis)))
        for name, choice in choices:
            backend = open_backend(choice, data_dir=Path(folder) / "data")
            try:
                rows.append(measure(name, backend.store, args))
            finally:
                backend.close()
            print(f"measured {name}", file=sys.stderr)
    header = list(rows[0])
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row[key] for key in header) + " |")


if __name__ == "__main__":
    main()
