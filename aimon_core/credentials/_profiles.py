"""Named profiles (provider, base URL, default model; the key in the credential store) and
where a provider's key comes from: the store, then the environment, then the settings."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from aimon_core._atomic import private_dir, write_atomic
from aimon_core.credentials._store import CredentialStore

PROVIDERS = ("anthropic", "openai")
FILE_NAME = "profiles.json"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
KeySource = Literal["store", "environment", "settings", "none"]


class ProfileError(Exception):
    """A profile is unknown or malformed; `name` is the profile's."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"profile {name!r}: {reason}")
        self.name = name
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """An account to run with: its provider, endpoint and default model (its key is stored
    in the credential store under the profile's name)."""

    name: str
    provider: str
    base_url: str | None = None
    model: str | None = None


def check_name(name: str) -> str:
    """Return `name` if it can name a profile or a stored key; raise ProfileError if not."""
    if not _NAME.fullmatch(name):
        raise ProfileError(name, "use letters, digits, '.', '_' and '-' (up to 64)")
    return name


class Profiles:
    """The user's profiles, in `profiles.json` of aimon's config folder."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / FILE_NAME

    @classmethod
    def default(cls) -> Profiles:
        """Return the user's profiles (`$AIMON_HOME/config/profiles.json`)."""
        from aimon_core.session import user_config_dir

        return cls(user_config_dir())

    def all(self) -> tuple[Profile, ...]:
        """Return every profile, sorted by name."""
        return tuple(self._read()[name] for name in sorted(self._read()))

    def get(self, name: str) -> Profile:
        """Return the profile `name`; raise ProfileError if there is none."""
        found = self._read().get(name)
        if found is None:
            known = ", ".join(sorted(self._read())) or "none yet (aimon auth login NAME ...)"
            raise ProfileError(name, f"no such profile; known: {known}")
        return found

    def put(self, profile: Profile) -> None:
        """Add or replace a profile."""
        check_name(profile.name)
        if profile.provider not in PROVIDERS:
            raise ProfileError(profile.name, f"provider must be one of {', '.join(PROVIDERS)}")
        profiles = self._read()
        profiles[profile.name] = profile
        self._write(profiles)

    def remove(self, name: str) -> bool:
        """Remove a profile; False if there was none."""
        profiles = self._read()
        if profiles.pop(name, None) is None:
            return False
        self._write(profiles)
        return True

    def _read(self) -> dict[str, Profile]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ProfileError(str(self.path), f"unreadable: {exc}") from exc
        found: dict[str, Profile] = {}
        for name, entry in (data.get("profiles") or {}).items():
            if isinstance(entry, dict) and entry.get("provider") in PROVIDERS:
                found[name] = Profile(name=name, provider=entry["provider"],
                                      base_url=_text(entry.get("base_url")),
                                      model=_text(entry.get("model")))
        return found

    def _write(self, profiles: Mapping[str, Profile]) -> None:
        data = {name: {k: v for k, v in (("provider", p.provider), ("base_url", p.base_url),
                                         ("model", p.model)) if v}
                for name, p in sorted(profiles.items())}
        private_dir(self.path.parent)
        write_atomic(self.path, (json.dumps({"profiles": data}, indent=2) + "\n").encode(),
                     mode=0o600)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def key_variable(provider: str) -> str:
    """Return the environment variable that holds `provider`'s key (`ANTHROPIC_API_KEY`)."""
    return f"{provider.upper()}_API_KEY"


def find_key(name: str, provider: str, *, store: CredentialStore, environ: Mapping[str, str],
             settings_env: Mapping[str, str]) -> tuple[str | None, KeySource]:
    """Return the key for `name` (a provider, or a profile of `provider`) and where it was
    found: the store, then the environment, then the settings' `env`."""
    key = store.get(name)
    if key:
        return key, "store"
    variable = key_variable(provider)
    if environ.get(variable):
        return environ[variable], "environment"
    if settings_env.get(variable):
        return settings_env[variable], "settings"
    return None, "none"


def provider_environment(environ: Mapping[str, str], *, store: CredentialStore,
                         settings_env: Mapping[str, str], profile: Profile | None = None
                         ) -> dict[str, str]:
    """Return `environ` with each provider's key as `find_key` finds it, for the provider
    choice (which reads `<PROVIDER>_API_KEY`); a profile's own key wins for its provider."""
    env = dict(environ)
    for provider in PROVIDERS:
        name = profile.name if profile is not None and profile.provider == provider else provider
        key, _ = find_key(name, provider, store=store, environ=environ, settings_env=settings_env)
        if key is None and name != provider:  # a profile without a key of its own
            key, _ = find_key(provider, provider, store=store, environ=environ,
                              settings_env=settings_env)
        if key is not None:
            env[key_variable(provider)] = key
    return env
