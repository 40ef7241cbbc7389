"""LiveSession: runs turns for one session, with one event stream and slash commands."""

from aimon_core.live._host import SessionCommandHost
from aimon_core.live._live import (
    CommandRan,
    LiveSession,
    LiveSessionClosedError,
    LiveSessionEvent,
    LiveSessionStatus,
    SubmitOutcome,
    TurnFinished,
    TurnId,
    TurnQueued,
    TurnStarted,
)

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
