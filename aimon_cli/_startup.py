"""What the `aimon` command does only while it starts: the cyclic garbage collector is held.

From `begin` (before the heavy imports) to `finish` (once the first session is open): starting
allocates a few hundred thousand objects that live as long as the process (modules, classes,
the SDK's pydantic models) and almost no cyclic garbage; with the collector on, every 700
allocations start a collection that walks the young objects again. `finish` moves everything
allocated so far out of the collector's sight (`gc.freeze`: later full collections skip it)
and turns it back on. Reference counting frees what is not cyclic all along. Measured on the
four-call fix (`bench/bench_fix4.py serve`, `hyperfine`, openai): `aimon -p` 519 ms with it,
543 ms without (user CPU 419 against 457 ms; docs/PERFORMANCE.md).

Only the command does this: `aimon_core` used as a library leaves the interpreter alone.
"""

from __future__ import annotations

import gc


def begin() -> None:
    """Hold the collector until `finish`."""
    gc.disable()


def finish() -> None:
    """End what `begin` started: freeze what exists, resume collections.

    Does nothing when nothing was begun: a second session opening, or a caller (a test, an
    embedding program) that never called `begin`.
    """
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
