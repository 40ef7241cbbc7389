"""A separate process for the crash tests: `python _child.py MODE BASE_DIR SESSION_ID HOLDER`.

append  take the lease, then append numbered messages forever, printing each number once the
        append returned
hold    take the lease, print "ready", then wait (until killed)
claim   claim the session through SessionStore; print "claimed" and append, or print
        "locked <holder>" and exit with status 3
"""

from __future__ import annotations

import sys
from pathlib import Path

from aimon_core.llm import Message
from aimon_core.session import (
    FileSessionLeaseStore,
    FileSessionRecordStore,
    SessionId,
    SessionLockedError,
    SessionStore,
)


def main(mode: str, base_dir: str, session_id: str, holder: str) -> int:
    records = FileSessionRecordStore(Path(base_dir))
    leases = FileSessionLeaseStore(Path(base_dir))
    if mode == "append":
        lease = leases.acquire(SessionId(session_id), holder)
        n = 0
        while True:
            # Large messages make it likely that the kill lands in the middle of a write.
            message = Message.user(f"message {n} " + "x" * (n % 7) * 20_000)
            records.append(SessionId(session_id), [message], lease=lease)
            print(n, flush=True)
            n += 1
    if mode == "hold":
        leases.acquire(SessionId(session_id), holder)
        print("ready", flush=True)
        sys.stdin.read()
        return 0
    if mode == "claim":
        sessions = SessionStore(records, leases)
        record = records.load(SessionId(session_id))
        try:
            claimed = sessions.claim(
                session_id,
                project_root=record.project_root,
                agent_ref=record.agent_ref,
                holder=holder,
            )
        except SessionLockedError as exc:
            print(f"locked {exc.holder}", flush=True)
            return 3
        records.append(claimed.record.id, [Message.user("from claim")], lease=claimed.lease)
        print("claimed", flush=True)
        return 0
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
