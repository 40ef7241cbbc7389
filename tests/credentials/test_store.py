"""The credential store: keyring (the keyring package's API, in memory here) or a 0600 file;
keys found store → environment → settings; profiles."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError

from aimon_core.credentials import (
    SERVICE,
    CredentialError,
    LocalCredentialStore,
    Profile,
    ProfileError,
    Profiles,
    find_key,
    provider_environment,
)


class MemoryKeyring(KeyringBackend):
    """A keyring backend that keeps passwords in a dict (keyring's backend API)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.passwords.pop((service, username), None) is None:
            raise PasswordDeleteError(username)


@pytest.fixture
def system() -> Iterator[MemoryKeyring]:
    """Make the in-memory backend the system's keyring, as `keyring.set_keyring` does."""
    before = keyring.get_keyring()
    memory = MemoryKeyring()
    keyring.set_keyring(memory)
    yield memory
    keyring.set_keyring(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_system_keyring_holds_the_key_and_the_file_only_its_name(
        tmp_path: Path, system: MemoryKeyring) -> None:
    store = LocalCredentialStore(tmp_path / "data")
    assert store.put("anthropic", "sk-ant-secret-1") == "keyring"
    assert system.passwords == {(SERVICE, "anthropic"): "sk-ant-secret-1"}
    assert "sk-ant-secret-1" not in store.path.read_text()
    assert LocalCredentialStore(tmp_path / "data").get("anthropic") == "sk-ant-secret-1"
    assert [(c.name, c.place) for c in store.stored()] == [("anthropic", "keyring")]
    assert store.delete("anthropic") and system.passwords == {}
    assert store.get("anthropic") is None and not store.delete("anthropic")


def test_without_a_keyring_the_key_is_in_a_0600_file(tmp_path: Path) -> None:
    # conftest makes keyring's own choice `fail.Keyring` (priority 0): no keyring works.
    store = LocalCredentialStore(tmp_path / "data")
    assert store.put("openai", "sk-open-secret-2") == "file"
    assert _mode(store.path) == 0o600 and _mode(store.path.parent) == 0o700
    assert json.loads(store.path.read_text())["credentials"]["openai"]["in"] == "file"
    assert LocalCredentialStore(tmp_path / "data", keyring=None).get("openai") == \
        "sk-open-secret-2"
    assert store.delete("openai") and store.get("openai") is None


def test_a_keyring_that_refuses_writes_falls_back_to_the_file(tmp_path: Path) -> None:
    class Refusing(MemoryKeyring):
        def set_password(self, service: str, username: str, password: str) -> None:
            raise keyring.errors.PasswordSetError("locked")

    store = LocalCredentialStore(tmp_path, keyring=Refusing())
    assert store.put("work", "sk-x-1234567") == "file"
    assert store.get("work") == "sk-x-1234567"


@pytest.mark.parametrize(("name", "secret"), [("", "k"), ("a", ""), ("a", "two\nlines")])
def test_a_name_and_a_one_line_key_are_needed(tmp_path: Path, name: str, secret: str) -> None:
    with pytest.raises(CredentialError):
        LocalCredentialStore(tmp_path, keyring=None).put(name, secret)


# Where each provider's key comes from: every combination of the three places.
@pytest.mark.parametrize("stored", [True, False])
@pytest.mark.parametrize("in_env", [True, False])
@pytest.mark.parametrize("in_settings", [True, False])
def test_keys_are_found_store_then_environment_then_settings(
        tmp_path: Path, stored: bool, in_env: bool, in_settings: bool) -> None:
    store = LocalCredentialStore(tmp_path, keyring=None)
    if stored:
        store.put("anthropic", "from-store")
    environ = {"ANTHROPIC_API_KEY": "from-env"} if in_env else {}
    settings = {"ANTHROPIC_API_KEY": "from-settings"} if in_settings else {}
    key, source = find_key("anthropic", "anthropic", store=store, environ=environ,
                           settings_env=settings)
    expected = ("from-store", "store") if stored else ("from-env", "environment") if in_env \
        else ("from-settings", "settings") if in_settings else (None, "none")
    assert (key, source) == expected
    env = provider_environment(environ, store=store, settings_env=settings)
    assert env.get("ANTHROPIC_API_KEY") == expected[0]


def test_a_profiles_key_wins_for_its_provider_and_falls_back_to_the_providers(
        tmp_path: Path) -> None:
    store = LocalCredentialStore(tmp_path, keyring=None)
    store.put("openai", "provider-key")
    work = Profile(name="work", provider="openai", base_url="http://x/v1", model="m")
    assert provider_environment({}, store=store, settings_env={}, profile=work)[
        "OPENAI_API_KEY"] == "provider-key"
    store.put("work", "work-key")
    assert provider_environment({}, store=store, settings_env={}, profile=work)[
        "OPENAI_API_KEY"] == "work-key"


def test_profiles_round_trip_and_refuse_bad_names(tmp_path: Path) -> None:
    profiles = Profiles(tmp_path)
    profiles.put(Profile(name="work", provider="openai", base_url="http://x/v1"))
    profiles.put(Profile(name="home", provider="anthropic", model="claude-haiku-4-5"))
    assert [p.name for p in Profiles(tmp_path).all()] == ["home", "work"]
    assert Profiles(tmp_path).get("work").base_url == "http://x/v1"
    assert _mode(profiles.path) == 0o600
    with pytest.raises(ProfileError, match="known: home, work"):
        profiles.get("play")
    for bad in ("", "../x", "a b", "x" * 65):
        with pytest.raises(ProfileError):
            profiles.put(Profile(name=bad, provider="openai"))
    with pytest.raises(ProfileError):
        profiles.put(Profile(name="p", provider="gemini"))
    assert profiles.remove("work") and not profiles.remove("work")
