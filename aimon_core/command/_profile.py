"""/profile: list the stored accounts, or switch this session to one (`aimon auth login`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from aimon_core.command._registry import CommandError, CommandHost, CommandOutcome, SlashCommand

if TYPE_CHECKING:
    from aimon_core.llm import LLMClient

PROFILE_USAGE = "/profile [NAME]"


def _listing(current: str) -> str:
    from aimon_core.credentials import Profiles

    profiles = Profiles.default().all()
    if not profiles:
        return ("No profiles yet. Add one: aimon auth login NAME --provider openai "
                "--base-url URL --model MODEL")
    rows = [f"  {p.name}: {p.provider}" + "".join(f", {v}" for v in (p.base_url, p.model) if v)
            for p in profiles]
    return "\n".join([f"Profiles (this session: {current}):", *rows,
                      f"Switch with {PROFILE_USAGE}; --profile NAME starts with one."])


async def _profile(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.credentials import CredentialError, ProfileError

    live = await host.live_session()
    current = f"{live.runtime.client.provider}, {live.runtime.model}"
    if not args.strip():
        return CommandOutcome.message(_listing(current))
    if len(args.split()) != 1:
        raise CommandError("/profile takes one profile name.")
    try:
        client, model = _client_of(args.strip(), host, live.runtime.client)
    except (CredentialError, ProfileError) as exc:
        return CommandOutcome.error(str(exc))
    await live.use_client(client, model)
    later = " It applies from the next turn." if live.turn_running() else ""
    return CommandOutcome.message(f"Profile: {args.strip()} ({client.provider}, {model}); "
                                  f"was {current}.{later}")


def _client_of(name: str, host: CommandHost, current: LLMClient) -> tuple[LLMClient, str]:
    """Return a model client for profile `name` (its key redacted like every other) and its
    model; raise ProfileError or CredentialError."""
    from aimon_core.credentials import (
        LocalCredentialStore,
        ProfileError,
        Profiles,
        find_key,
        key_variable,
    )
    from aimon_core.llm import (
        DEFAULT_MODELS,
        PLACEHOLDER_KEY,
        ProviderChoice,
        RedactingClient,
        make_client,
    )

    profile = Profiles.default().get(name)
    settings_env = host.settings.settings.env if host.settings is not None else {}
    store = LocalCredentialStore.default()
    key, _ = find_key(name, profile.provider, store=store, environ=os.environ,
                      settings_env=settings_env)
    if key is None:
        key, _ = find_key(profile.provider, profile.provider, store=store, environ=os.environ,
                          settings_env=settings_env)
    if key is None and profile.base_url is None:
        raise ProfileError(name, f"no key: aimon auth login {name}")
    model = profile.model or DEFAULT_MODELS[profile.provider]
    inner = make_client(ProviderChoice(provider=profile.provider, model=model,
                                       base_url=profile.base_url, api_key=key or PLACEHOLDER_KEY))
    extra = ((key_variable(profile.provider), key),) if key else ()
    if isinstance(current, RedactingClient):
        return current.around(inner, extra), model
    return RedactingClient(inner, lambda: extra), model


def profile_commands() -> tuple[SlashCommand, ...]:
    """Return /profile."""
    return (SlashCommand(name="profile", description="List the stored accounts or switch to one",
                         run=_profile, usage=PROFILE_USAGE),)
