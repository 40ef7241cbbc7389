"""Provider keys kept by aimon: in the operating system's keyring, or in a 0600 file.

The seeds' `CredentialStore`, application-scoped. `aimon auth login` puts a key here; the
runtime looks a provider's key up here first, then in the environment, then in the settings'
`env`. A key is never written to a session file, a transcript, a log or a trace: it lives
here and in the model client only.

One small file, `credentials.json` in aimon's data folder (mode 0600, folder 0700), lists
every stored name and where its secret is: in the keyring (the file holds no secret then)
or in the file itself, where no keyring exists (a server, a container). Reading it costs a
stat; `keyring` itself (~300 ms to import and probe) loads only for a key kept there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from aimon_core._atomic import private_dir, write_atomic

SERVICE = "aimon"  # the keyring's service name; the username is the credential's name
FILE_NAME = "credentials.json"
_VERSION = 1
Place = Literal["keyring", "file"]


class KeyringLike(Protocol):
    """What aimon uses of a `keyring` backend (`keyring.get_keyring()` is one)."""

    def get_password(self, service: str, username: str) -> str | None:
        """Return the secret stored for `username`, or None."""
        ...

    def set_password(self, service: str, username: str, password: str) -> None:
        """Store `password` for `username`."""
        ...

    def delete_password(self, service: str, username: str) -> None:
        """Remove the secret of `username`."""
        ...


class CredentialError(Exception):
    """A credential cannot be stored, read or removed; `name` is the credential's."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"credential {name!r}: {reason}")
        self.name = name
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredCredential:
    """A stored name and where its secret is (never the secret)."""

    name: str
    place: Place


class CredentialStore(Protocol):
    """Keys by name (a provider, `anthropic`, or a profile, `work`)."""

    def get(self, name: str) -> str | None:
        """Return the key stored as `name`, or None."""
        ...

    def put(self, name: str, secret: str) -> Place:
        """Store `secret` as `name` (replacing any) and say where it went."""
        ...

    def delete(self, name: str) -> bool:
        """Remove `name`; False if nothing was stored as it."""
        ...

    def stored(self) -> tuple[StoredCredential, ...]:
        """Return every stored name, sorted."""
        ...


def system_keyring() -> KeyringLike | None:
    """Return the operating system's keyring, or None where none works (priority <= 0)."""
    import keyring  # ~300 ms with its backends' probe: only when a key is kept there

    backend = keyring.get_keyring()
    return backend if backend.priority > 0 else None


class LocalCredentialStore:
    """The keyring where one works, else the file; the file lists the names either way.

    `keyring`: a backend to use, None for the file alone, or "system" for the operating
    system's (found when first needed: `PYTHON_KEYRING_BACKEND` chooses one, as keyring does).
    """

    def __init__(self, folder: Path, *, keyring: KeyringLike | Literal["system"] | None = "system"
                 ) -> None:
        self.path = folder / FILE_NAME
        self._keyring = keyring

    @classmethod
    def default(cls) -> LocalCredentialStore:
        """Return the user's store, in aimon's data folder (`$AIMON_HOME/data`)."""
        from aimon_core.session import user_data_dir

        return cls(user_data_dir())

    def get(self, name: str) -> str | None:
        """Return the key stored as `name`, or None."""
        entry = self._read().get(name)
        if not isinstance(entry, dict):
            return None
        if entry.get("in") == "file":
            key = entry.get("key")
            return key if isinstance(key, str) and key else None
        backend = self._backend()
        if backend is None:
            return None
        try:
            return backend.get_password(SERVICE, name) or None
        except Exception as exc:  # a locked or vanished keyring: say so, never guess
            raise CredentialError(name, f"the keyring could not be read: {exc}") from exc

    def put(self, name: str, secret: str) -> Place:
        """Store `secret` as `name` in the keyring, or in the file where none works."""
        if not name or not secret or "\n" in secret:
            raise CredentialError(name, "a name and a one-line key are needed")
        entries = self._read()
        backend = self._backend()
        place: Place = "file"
        if backend is not None:
            try:
                backend.set_password(SERVICE, name, secret)
                place = "keyring"
            except Exception:
                place = "file"  # e.g. a keyring that refuses writes: the file still works
        entries[name] = {"in": "keyring"} if place == "keyring" else {"in": "file", "key": secret}
        self._write(entries)
        return place

    def delete(self, name: str) -> bool:
        """Remove `name` from the file and from the keyring."""
        entries = self._read()
        entry = entries.pop(name, None)
        if entry is None:
            return False
        self._write(entries)
        if isinstance(entry, dict) and entry.get("in") == "keyring" and \
                (backend := self._backend()) is not None:
            try:
                backend.delete_password(SERVICE, name)
            except Exception as exc:
                raise CredentialError(name, f"removed from aimon's list, but the keyring "
                                            f"kept it: {exc}") from exc
        return True

    def stored(self) -> tuple[StoredCredential, ...]:
        """Return every stored name and where its key is, sorted by name."""
        return tuple(StoredCredential(name=name, place="file" if entry.get("in") == "file"
                                      else "keyring")
                     for name, entry in sorted(self._read().items()) if isinstance(entry, dict))

    def _backend(self) -> KeyringLike | None:
        if self._keyring == "system":
            self._keyring = system_keyring()
        return self._keyring

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, NotADirectoryError):
            return {}  # nothing stored (a data folder that is no folder is the store's to say)
        except (OSError, ValueError) as exc:
            raise CredentialError(str(self.path), f"unreadable: {exc}") from exc
        entries = data.get("credentials") if isinstance(data, dict) else None
        return dict(entries) if isinstance(entries, Mapping) else {}

    def _write(self, entries: Mapping[str, Any]) -> None:
        private_dir(self.path.parent)
        text = json.dumps({"version": _VERSION, "credentials": dict(entries)}, indent=2)
        write_atomic(self.path, (text + "\n").encode(), mode=0o600)
