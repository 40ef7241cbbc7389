"""/model: list the models of the session's provider, or switch the session's model."""

from __future__ import annotations

import difflib
import os
import re
from typing import TYPE_CHECKING

from aimon_core.command._registry import (
    CANCELLED,
    CommandError,
    CommandHost,
    CommandOutcome,
    SlashCommand,
    pick,
)

if TYPE_CHECKING:
    from aimon_core.config import LoadedSettings
    from aimon_core.live import LiveSession

MODEL_USAGE = "/model [NAME]"
ALIAS_NOTE = "means {model} here"
# A dated id of a known model: claude-haiku-4-5-20251001, gpt-4o-2024-08-06.
_DATED = re.compile(r"-\d{8}|-\d{4}-\d{2}-\d{2}")
PROVIDERS = ("anthropic", "openai")


def known_name(name: str, known: tuple[str, ...]) -> str | None:
    """Return `name` (lowercase) if it is a known model or a dated id of one, else None."""
    wanted = name.strip().lower()
    for model in known:
        if wanted == model or (wanted.startswith(model)
                               and _DATED.fullmatch(wanted[len(model):])):
            return wanted
    return None


def open_endpoint(provider: str, current: str, settings: LoadedSettings | None,
                  env: dict[str, str] | None = None) -> str | None:
    """Return the OpenAI-compatible endpoint that serves models aimon does not know, or None.

    That is a custom base URL (settings, `--base-url`, OPENAI_BASE_URL: Ollama, vLLM, ...), or
    a session already running a model the registry does not know (a local server found at
    start). There any model name is taken as given.
    """
    from aimon_core.llm import known_models

    if provider != "openai":
        return None
    environ = os.environ if env is None else env
    base = (settings.settings.base_url if settings is not None else None) \
        or environ.get("OPENAI_BASE_URL")
    if base:
        return base
    if known_name(current, known_models(provider)) is None:
        return "this model server"
    return None


def models_text(provider: str, current: str, known: tuple[str, ...],
                endpoint: str | None) -> str:
    """Return what /model shows: the provider's known models, `*` marking the current one."""
    names = known if current in known else (current, *known)
    rows = "\n".join(f"{'*' if name == current else ' '} {name}" for name in names)
    lines = [f"Models aimon knows for {provider} (* is this session's):", rows or "  (none)"]
    if endpoint is not None:
        lines.append(f"{endpoint} is an OpenAI-compatible endpoint: /model takes any model "
                     "name it serves.")
    lines.append(f"Switch with {MODEL_USAGE}; the session keeps the model when resumed.")
    return "\n".join(lines)


def model_choices(live: LiveSession | None) -> tuple[tuple[str, str], ...]:
    """Return the models /model offers for the session's provider: aliases, then names."""
    from aimon_core.llm import known_models

    if live is None:
        return ()
    provider, current = live.runtime.client.provider, live.runtime.model
    aliases = tuple((alias, ALIAS_NOTE.format(model=model))  # (OpenAI's: typed only)
                    for alias, model in _aliases(provider)) if provider == "anthropic" else ()
    known = known_models(provider)
    names = known if current in known else (current, *known)
    return (*aliases, *((name, "this session's" if name == current else "") for name in names))


def _aliases(provider: str) -> tuple[tuple[str, str], ...]:
    """Return Claude Code's model aliases and the model each means for `provider`."""
    from aimon_core.llm import resolve_model_alias

    return tuple((alias, model) for alias in ("haiku", "sonnet", "opus")
                 if (model := resolve_model_alias(alias, provider)) is not None)


def _unknown(name: str, provider: str, known: tuple[str, ...]) -> str:
    """Return the refusal of a model name the registry does not know for `provider`, with
    the nearest names (an alias such as `sonnet` among them, on Anthropic)."""
    from aimon_core.llm import known_models

    for other in PROVIDERS:
        if other != provider and known_name(name, known_models(other)) is not None:
            return (f"{name} is an {other} model, and this session talks to {provider}: "
                    f"start a new run with --provider {other} --model {name}.")
    aliases = tuple(alias for alias, _ in _aliases(provider))
    near = difflib.get_close_matches(name.lower(), (*aliases, *known), n=3, cutoff=0.6)
    hint = f" Did you mean {' or '.join(near)}?" if near else ""
    return f"Unknown model {name!r} for {provider}.{hint} /model lists the models."


async def _model(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.llm import known_models, resolve_model_alias

    live = await host.live_session()
    provider, current = live.runtime.client.provider, live.runtime.model
    known = known_models(provider)
    endpoint = open_endpoint(provider, current, host.settings)
    if not args:
        picked = await pick(host, "Switch to which model?",
                            tuple(c for c in model_choices(live) if c[0] != current), None)
        if picked is None:
            return CommandOutcome.message(models_text(provider, current, known, endpoint))
        if picked == CANCELLED:
            return CommandOutcome.message(f"Model unchanged: {current}.")
        args = picked
    if len(args.split()) != 1:
        raise CommandError("/model takes one model name.")
    chosen = known_name(args, known)
    if chosen is None and endpoint is None:
        # Claude Code's `/model haiku`: the provider's current model of that rank.
        chosen = resolve_model_alias(args, provider)
    if chosen is None and endpoint is None:
        return CommandOutcome.error(_unknown(args, provider, known))
    name = chosen or args.strip()
    if name == current:
        return CommandOutcome.message(f"Already using {name}.")
    live.set_model(name)
    later = " It applies from the next turn." if live.turn_running() else ""
    note = "" if chosen else (f" aimon does not know this model, so {endpoint} is trusted to "
                              "serve it (limits and prices are guessed).")
    # A session is stored from its first prompt: until then the choice waits in memory.
    kept = "the session keeps it when resumed" if live.is_stored else \
        "it is stored with the session from its first prompt"
    return CommandOutcome.message(f"Model: {name} (was {current}); {kept}.{later}{note}")


def model_commands() -> tuple[SlashCommand, ...]:
    """Return /model."""
    return (SlashCommand(name="model", description="Switch this session's model (pick one)",
                         run=_model, usage=MODEL_USAGE, choices=model_choices),)
