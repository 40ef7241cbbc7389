"""LiveSession: runs turns for one session, with one event stream and slash commands."""

from aimon_core.live._events import (
    CommandRan,
    LiveSessionClosedError,
    LiveSessionEvent,
    LiveSessionStatus,
    SubmitOutcome,
    TurnFinished,
    TurnId,
    TurnQueued,
    TurnStarted,
)
from aimon_core.live._host import SessionCommandHost
from aimon_core.live._live import LiveSession

__all__ = [
    "CommandRan",
    "LiveSession",
    "LiveSessionClosedError",
    "LiveSessionEvent",
    "LiveSessionStatus",
    "SessionCommandHost",
    "SubmitOutcome",
    "TurnFinished",
    "TurnId",
    "TurnQueued",
    "TurnStarted",
]
