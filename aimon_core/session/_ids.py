"""Session ids: sortable by creation time, safe as file names, validated when typed by a user."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime
from typing import NewType

from aimon_core.session._errors import InvalidSessionIdError

SessionId = NewType("SessionId", str)

# YYYYMMDD-HHMMSS-<6 hex>, UTC: sorts by creation time to the second, and never needs quoting
# in a shell or escaping in a path.
_ID_PATTERN = re.compile(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{6}")


def new_session_id(now: datetime | None = None) -> SessionId:
    """Make a fresh session id for a session created `now` (default: the current time)."""
    when = (now or datetime.now(UTC)).astimezone(UTC)
    return SessionId(f"{when:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}")


def parse_session_id(text: str) -> SessionId:
    """Check that `text` is a session id and return it; raise InvalidSessionIdError if not."""
    candidate = text.strip()
    if not candidate:
        raise InvalidSessionIdError(text, "it is empty")
    if any(c in candidate for c in "/\\\0") or candidate.startswith("."):
        raise InvalidSessionIdError(text, "it looks like a path")
    if not _ID_PATTERN.fullmatch(candidate):
        raise InvalidSessionIdError(text, "expected the form YYYYMMDD-HHMMSS-xxxxxx")
    return SessionId(candidate)


def is_session_id(text: str) -> bool:
    """Return whether `text` is a well-formed session id."""
    return _ID_PATTERN.fullmatch(text) is not None
