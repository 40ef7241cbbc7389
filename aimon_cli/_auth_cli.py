"""`aimon auth login|status|logout`: provider keys in the keyring (or a 0600 file), and
named profiles (provider, base URL, model, key) for `--profile` and `/profile`."""

from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from aimon_core.credentials import (
    PROVIDERS,
    CredentialError,
    LocalCredentialStore,
    Profile,
    ProfileError,
    Profiles,
    check_name,
    find_key,
    key_variable,
)

auth_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                       help="Store, show and remove provider keys and profiles.",
                       context_settings={"help_option_names": ["-h", "--help"]})

_WHERE = {"store": "stored by aimon auth login", "environment": "from the environment",
          "settings": "from the settings' env", "none": "no key"}


def _fail(message: str) -> typer.Exit:
    typer.echo(f"aimon auth: {message}", err=True)
    return typer.Exit(1)


def _read_key(name: str) -> str:
    """Read the key without echoing it: a prompt on a terminal, else stdin's first line."""
    if sys.stdin.isatty():
        return getpass.getpass(f"API key for {name}: ").strip()
    return sys.stdin.readline().strip()


@auth_app.command("login")
def login(
    name: Annotated[str, typer.Argument(help="anthropic, openai, or a profile's name")],
    provider: Annotated[str | None, typer.Option(help="a profile's provider")] = None,
    base_url: Annotated[str | None, typer.Option("--base-url", help="a profile's API URL")]
    = None,
    model: Annotated[str | None, typer.Option(help="a profile's default model")] = None,
) -> None:
    """Store a key (read from the terminal or stdin, never from the command line)."""
    try:
        check_name(name)
        if name not in PROVIDERS or provider or base_url or model:
            chosen = provider or (name if name in PROVIDERS else None)
            if chosen is None:
                raise _fail(f"a profile needs its provider: --provider {'|'.join(PROVIDERS)}")
            Profiles.default().put(Profile(name=name, provider=chosen, base_url=base_url,
                                           model=model))
        key = _read_key(name)
        if not key:
            raise _fail("no key given; nothing stored")
        store = LocalCredentialStore.default()
        place = store.put(name, key)
    except (CredentialError, ProfileError) as exc:
        raise _fail(str(exc)) from None
    where = "the system keyring" if place == "keyring" else \
        f"{store.path} (mode 0600: no keyring works here)"
    typer.echo(f"Stored the key for {name} in {where}.")
    if name not in PROVIDERS:
        typer.echo(f"Use it with: aimon --profile {name}  (or /profile {name})")


@auth_app.command("status")
def status() -> None:
    """Show where each provider's key comes from, and the profiles (never a key)."""
    from aimon_core.config import SettingsError, TrustStore, load_settings

    try:
        settings_env = load_settings(Path.cwd(), trust_store=TrustStore()).settings.env
    except SettingsError as exc:
        typer.echo(f"warning: {exc}", err=True)
        settings_env = {}
    store = LocalCredentialStore.default()
    try:
        places = {entry.name: entry.place for entry in store.stored()}
        for provider in PROVIDERS:
            _, source = find_key(provider, provider, store=store, environ=os.environ,
                                 settings_env=settings_env)
            where = _WHERE[source]
            if source == "store":
                where += f" ({places.get(provider, 'keyring')})"
            elif source != "none":
                where += f" ({key_variable(provider)})"
            typer.echo(f"{provider}: {where}")
        for profile in Profiles.default().all():
            parts = [profile.provider, profile.base_url or "", profile.model or ""]
            stored = "key stored" if profile.name in places else "no key of its own"
            typer.echo(f"profile {profile.name}: {', '.join(p for p in parts if p)}; {stored}")
    except (CredentialError, ProfileError) as exc:
        raise _fail(str(exc)) from None


@auth_app.command("logout")
def logout(name: Annotated[str, typer.Argument(help="anthropic, openai, or a profile")]) -> None:
    """Remove a stored key (and the profile of that name)."""
    try:
        removed = LocalCredentialStore.default().delete(name)
        profile = Profiles.default().remove(name)
    except (CredentialError, ProfileError) as exc:
        raise _fail(str(exc)) from None
    if not (removed or profile):
        raise _fail(f"nothing stored as {name!r}")
    typer.echo(f"Removed {name}" + (" and its profile." if profile else "."))
