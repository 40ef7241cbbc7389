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
from aimon_core.live._host import CommandScope, SessionCommandHost
from aimon_core.live._live import LiveSession, LiveSessionOptions, PromptExpander

__all__ = [
    "CommandRan",
    "CommandScope",
    "LiveSession",
    "LiveSessionClosedError",
    "LiveSessionEvent",
    "LiveSessionOptions",
    "LiveSessionStatus",
    "PromptExpander",
    "SessionCommandHost",
    "SubmitOutcome",
    "TurnFinished",
    "TurnId",
    "TurnQueued",
    "TurnStarted",
]
