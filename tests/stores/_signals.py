"""A check both networked signal buses pass: a dropped connection loses no signal."""

from __future__ import annotations

import threading
from collections.abc import Callable

from aimon_core.service import Signal, SignalBus


def check_catch_up(bus: SignalBus, publisher: SignalBus, *,
                   missed_then_cut: Callable[[], None]) -> None:
    """Listen on `bus`; `missed_then_cut` records an interrupt for "s-drop" that the bus
    never heard (sent while its connection was down) and drops the bus's connection. The
    bus must deliver it once connected again, and hear `publisher` live after that."""
    heard: list[Signal] = []
    arrived = threading.Semaphore(0)

    def handler(signal: Signal) -> None:
        heard.append(signal)
        arrived.release()

    bus.subscribe("s-drop", handler)
    missed_then_cut()
    assert arrived.acquire(timeout=20)  # caught up once connected again
    assert heard == [Signal.INTERRUPT]
    publisher.publish("s-drop", Signal.CLOSE)
    while Signal.CLOSE not in heard:
        assert arrived.acquire(timeout=20)
