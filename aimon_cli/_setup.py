"""Turn command-line options and settings files into an AgentRuntime and a ToolContext."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimon_core.agent import AgentDefinition, AgentRuntime
    from aimon_core.config import LoadedSettings
    from aimon_core.hook import HookRegistry
    from aimon_core.llm import ProviderChoice
    from aimon_core.permission import Approver, PermissionPolicy, PermissionRules
    from aimon_core.session import LiveSession
    from aimon_core.tools import ToolContext


class SetupError(Exception):
    """The command line or configuration cannot start aimon; the message says how to fix it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelOptions:
    """Model-related flags."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeOptions:
    """Everything needed to build an agent runtime."""

    project_root: Path
    model: ModelOptions = field(default_factory=ModelOptions)
    agent: str | None = None
    allowed: tuple[str, ...] = ()
    disallowed: tuple[str, ...] = ()
    permission_mode: str | None = None


@dataclass(slots=True, kw_only=True)
class Assembly:
    """What build_runtime made: the runtime, its policy and hooks, and notes for the user."""

    runtime: AgentRuntime
    policy: PermissionPolicy
    hooks: HookRegistry
    settings: LoadedSettings
    notices: list[str]


def load_project_settings(options: RuntimeOptions, *, trust_all: bool = False
                          ) -> LoadedSettings:
    """Load user, project and local settings plus the flags; SetupError if any is broken."""
    from aimon_core.config import SettingsError, TrustStore, load_settings

    try:
        return load_settings(options.project_root, flags=settings_flags(options),
                             trust_store=TrustStore(), trust_all=trust_all)
    except SettingsError as exc:
        raise SetupError(str(exc)) from None


def settings_flags(options: RuntimeOptions) -> dict[str, Any]:
    """Return the model flags in the shape of a settings file (None: the flag was not given)."""
    return {
        "model": options.model.model,
        "provider": options.model.provider,
        "base_url": options.model.base_url,
    }


def find_agent(name: str | None, project_root: Path) -> AgentDefinition:
    """Return the named agent from the project, the user config, or the built-ins."""
    from aimon_core.agent import AgentDefinitionError, load_agent_file, load_builtin_agent

    if name is None or name == "default":
        return load_builtin_agent("default")
    from aimon_core.session import user_config_dir

    for folder in (project_root / ".aimon" / "agents", user_config_dir() / "agents"):
        path = folder / f"{name}.md"
        if path.is_file():
            try:
                return load_agent_file(path)
            except AgentDefinitionError as exc:
                raise SetupError(f"agent {name!r} cannot be loaded: {exc}") from exc
    try:
        return load_builtin_agent(name)
    except AgentDefinitionError:
        raise SetupError(
            f"no agent named {name!r}: looked in {project_root / '.aimon' / 'agents'}, "
            f"{user_config_dir() / 'agents'} and the built-in agents"
        ) from None


def _choose(options: RuntimeOptions, settings: LoadedSettings, agent: AgentDefinition
            ) -> ProviderChoice:
    from aimon_core.llm import ModelConfigError, choose_provider, probe_ollama

    merged = settings.settings
    flags = ModelOptions(provider=merged.provider, model=merged.model, base_url=merged.base_url)
    try:
        choice = choose_provider(
            provider=flags.provider,
            model=flags.model,
            base_url=flags.base_url,
            env=os.environ,
            # Tests and CI switch the local-server probe off so a stray Ollama cannot answer.
            probe_local=(lambda: None) if os.environ.get("AIMON_NO_LOCAL_PROBE") else probe_ollama,
        )
    except ModelConfigError as exc:
        raise SetupError(exc.message) from exc
    return _agent_model(choice, agent, flags)


def _agent_model(choice: ProviderChoice, agent: AgentDefinition, flags: ModelOptions
                 ) -> ProviderChoice:
    """Use the agent's model as a fallback: a flag or AIMON_MODEL wins, and so does the provider."""
    wanted = agent.model.name
    if wanted is None or flags.model or os.environ.get("AIMON_MODEL") or choice.detected_local:
        return choice
    implied = "anthropic" if wanted.startswith("claude") else (
        "openai" if wanted.startswith(("gpt", "o3", "o4")) else None)
    if implied not in (None, choice.provider):
        return choice
    return replace(choice, model=wanted)


def build_policy(options: RuntimeOptions, settings: LoadedSettings, runtime_id: str
                 ) -> tuple[PermissionPolicy, list[str]]:
    """Return the permission policy from settings and flags, and notes for the user."""
    from aimon_core.permission import (
        AgentApprovalStore,
        PermissionModeError,
        PermissionPolicy,
        RuleError,
        agent_approvals_path,
        parse_mode,
    )
    from aimon_core.session import user_data_dir

    permissions = settings.settings.permissions
    try:
        rules, extra_dirs = _rules(options, settings)
        mode = parse_mode(options.permission_mode or permissions.default_mode)
        agent_store = AgentApprovalStore(agent_approvals_path(user_data_dir(), runtime_id))
        policy = PermissionPolicy(rules, mode, options.project_root, agent=agent_store,
                                  extra_dirs=extra_dirs)
    except (RuleError, PermissionModeError, ValueError) as exc:
        raise SetupError(str(exc)) from None
    notes = [agent_store.problem] if agent_store.problem else []
    return policy, notes


def _rules(options: RuntimeOptions, settings: LoadedSettings
           ) -> tuple[PermissionRules, tuple[Path, ...]]:
    """Return the settings' permission rules merged with the flags', and the extra folders;
    RuleError if a rule does not parse."""
    from aimon_core.permission import PermissionRules

    permissions = settings.settings.permissions
    flags = PermissionRules.parse(allow=options.allowed, deny=options.disallowed)
    return (permissions.rules().merged(flags),
            tuple(Path(p) for p in permissions.additional_directories))


def build_hooks(settings: LoadedSettings, project_root: Path) -> HookRegistry:
    """Return a hook registry holding the command hooks of every loaded settings file."""
    from aimon_core.hook import HookRegistry

    return HookRegistry(hook_specs(settings, lambda e: _raise(SetupError(str(e)))),
                        project_dir=project_root)


def _raise(exc: Exception) -> None:
    raise exc


def hook_specs(settings: LoadedSettings, on_error: Callable[[Exception], None]) -> list[Any]:
    """Return the command hooks of all settings files; report a broken one to `on_error`."""
    from aimon_core.hook import HookConfigError, parse_hooks_config

    specs: list[Any] = []
    for source, hooks in settings.hooks_by_source():
        try:
            specs.extend(parse_hooks_config({"hooks": hooks},
                                            source=str(source.path or "flags")))
        except HookConfigError as exc:
            on_error(exc)
    return specs


def build_runtime(
    options: RuntimeOptions,
    settings: LoadedSettings,
    *,
    approve: Approver | None = None,
    on_event: Callable[[object], None] | None = None,
) -> Assembly:
    """Choose the model, load the agent, tools, policy and hooks; return them together."""
    from aimon_core.agent import AgentRuntime
    from aimon_core.llm import ModelSettings, make_client
    from aimon_core.permission import interactive_gate
    from aimon_core.tools import ToolRegistry
    from aimon_core.tools.builtin import builtin_tools

    agent = find_agent(options.agent, options.project_root)
    notices = list(agent.warnings)
    choice = _choose(options, settings, agent)
    if choice.detected_local:
        notices.append(
            f"No API key configured: using the local model server at {choice.base_url} "
            f"(model {choice.model})."
        )
    tools = ToolRegistry(builtin_tools())
    if agent.tools is not None:
        unknown = [t for t in agent.tools if t.split("(")[0] not in tools]
        if unknown:
            notices.append(f"agent {agent.name!r} names unknown tools: {', '.join(unknown)}")
        tools = tools.only(t.split("(")[0] for t in agent.tools)
    from aimon_core.agent import AgentRuntimeId

    runtime_id = AgentRuntimeId.of(agent.name)
    policy, notes = build_policy(options, settings, str(runtime_id))
    notices.extend(notes)
    hooks = build_hooks(settings, options.project_root)
    gate = interactive_gate(policy, approve=approve, hooks=hooks,
                            **({"on_event": on_event} if on_event is not None else {}))
    runtime = AgentRuntime(
        agent=agent, client=make_client(choice), model=choice.model, tools=tools, gate=gate,
        settings=ModelSettings(), hooks=hooks, id=runtime_id,
    )
    return Assembly(runtime=runtime, policy=policy, hooks=hooks, settings=settings,
                    notices=notices)


def attach_policy(policy: PermissionPolicy, live: LiveSession) -> None:
    """Keep session approvals on `live`'s record; forget turn approvals as each turn starts."""
    from aimon_core.session import TurnStarted

    policy.session.attach(live.record.approvals, live.set_approvals)
    policy.start_turn()
    live.subscribe(lambda event: policy.start_turn() if isinstance(event, TurnStarted) else None)


def apply_settings(assembly: Assembly, options: RuntimeOptions, loaded: LoadedSettings,
                   on_error: Callable[[Exception], None]) -> list[str]:
    """Make reloaded settings take effect in a built runtime; return notes for the user.

    Permission rules, additional directories and hooks are replaced; the mode changes when
    the settings' defaultMode changed (a --permission-mode flag wins). The model and the env
    of running sessions stay as they were (a note says so). Problems go to ``on_error``.
    """
    from aimon_core.permission import PermissionModeError, RuleError, parse_mode

    permissions, old = loaded.settings.permissions, assembly.settings.settings
    policy, notes = assembly.policy, list[str]()
    try:
        rules, extra_dirs = _rules(options, loaded)
    except RuleError as exc:
        on_error(exc)
        return notes
    policy.set_rules(rules, extra_dirs=extra_dirs)
    if options.permission_mode is None and permissions.default_mode != old.permissions.default_mode:
        try:
            policy.set_mode(parse_mode(permissions.default_mode))
            notes.append(f"permission mode is now {policy.mode.value}")
        except PermissionModeError as exc:
            on_error(exc)
    assembly.hooks.replace_commands(hook_specs(loaded, on_error))
    assembly.settings = loaded
    new = loaded.settings
    if (new.model, new.provider, new.base_url) != (old.model, old.provider, old.base_url):
        notes.append("model changes take effect when aimon starts again")
    if new.env != old.env:
        notes.append("env changes apply to new sessions (/clear)")
    return notes


def make_tool_context(
    project_root: Path,
    session_id: str = "",
    agent_name: str = "default",
    env: Mapping[str, str] | None = None,
) -> ToolContext:
    """Return a ToolContext on the local file system and shell."""
    from aimon_core.filesystem import LocalFileSystem
    from aimon_core.shell import LocalShell
    from aimon_core.tools import ToolContext
    from aimon_core.tools._state import ToolState

    return ToolContext(
        project_root=project_root,
        cwd=project_root,
        fs=LocalFileSystem(project_root),
        shell=LocalShell(env=env),
        state=ToolState(),
        session_id=session_id,
        agent_name=agent_name,
    )
