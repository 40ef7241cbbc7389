"""Errors of the networked stores: the server cannot be reached, or its schema is not ours."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


class StoreError(Exception):
    """A networked store (PostgreSQL, Redis) could not be used."""


class StoreUnavailableError(StoreError):
    """The store's server cannot be reached or refused the connection."""

    def __init__(self, store: str, reason: str) -> None:
        super().__init__(f"cannot reach the store {store!r}: {reason}")
        self.store = store
        self.reason = reason


class StoreSchemaError(StoreError):
    """The database holds a schema this aimon cannot use (made by a newer aimon)."""


class StoreURLError(StoreError, ValueError):
    """A store URL names no backend aimon has."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"not a store URL: {url!r} ({reason})")
        self.url = url
        self.reason = reason


def redacted(url: str) -> str:
    """Return `url` without its password, for messages and lease descriptions."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))
