"""What the settings make for a runtime: the agent, the model choice, the policy, the hooks.

Pieces of the composition root (`build_runtime`) that settings reloads use again
(`AgentAssembly.apply_settings`): each reads settings and flags and returns a value, or
raises RuntimeSetupError with a message that says what to fix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.runtime._parts import NO_FLAGS, RuntimeFlags, RuntimeSetupError

if TYPE_CHECKING:
    from aimon_core.agent import AgentDefinition
    from aimon_core.config import LoadedSettings
    from aimon_core.credentials import Profile
    from aimon_core.hook import CommandHookSpec, HookRegistry
    from aimon_core.llm import ProviderChoice
    from aimon_core.permission import PermissionPolicy, PermissionRules
    from aimon_core.skill import SkillRegistry
    from aimon_core.subagent import AgentRegistry


def load_runtime_settings(project_root: Path, flags: RuntimeFlags = NO_FLAGS, *,
                          trust_all: bool = False) -> LoadedSettings:
    """Load user, project and local settings plus the flags; RuntimeSetupError if broken."""
    from aimon_core.config import SettingsError, TrustStore, load_settings

    try:
        return load_settings(project_root, flags=flags.settings_layer(),
                             trust_store=TrustStore(), trust_all=trust_all)
    except SettingsError as exc:
        raise RuntimeSetupError(str(exc)) from None


def find_agent(name: str | None, project_root: Path,
               readable: Callable[[Path], bool] | None = None) -> AgentDefinition:
    """Return the named agent from the project, the user config, or the built-ins.

    `readable` is the path deny rules: a definition they cover is not read.
    """
    from aimon_core.agent import AgentDefinitionError, load_builtin_agent
    from aimon_core.session import user_config_dir
    from aimon_core.subagent import load_named_agent

    if name is None or name == "default":
        return load_builtin_agent("default")
    folders = (project_root / ".aimon" / "agents", project_root / ".claude" / "agents",
               user_config_dir() / "agents")
    try:
        found = load_named_agent(name, project_root, readable)
    except AgentDefinitionError as exc:
        raise RuntimeSetupError(f"agent {name!r} cannot be loaded: {exc}") from exc
    if found is not None:
        return found
    bundled = _bundle_agent(name)
    if bundled is not None:
        return bundled
    try:
        return load_builtin_agent(name)
    except AgentDefinitionError:
        raise RuntimeSetupError(
            f"no agent named {name!r}: looked in {', '.join(str(f) for f in folders)} "
            "and the built-in agents") from None


def _bundle_agent(name: str) -> AgentDefinition | None:
    """Return the agent of the installed bundle `name`, carrying its bundle, or None."""
    from aimon_core.bundle import AgentBundleRegistry, BundleError

    try:
        bundle = AgentBundleRegistry.default().get(name)
    except BundleError as exc:
        raise RuntimeSetupError(str(exc)) from exc
    if bundle is None or bundle.agent is None:
        return None
    return replace(bundle.agent, extra={**bundle.agent.extra, "bundles": [bundle.name]})


def carry_bundles(agent: AgentDefinition, skills: SkillRegistry, agents: AgentRegistry,
                  notices: list[str]) -> tuple[SkillRegistry, AgentRegistry]:
    """Add the subagents and skills of the bundles `agent` carries (`bundles:`)."""
    from aimon_core.bundle import AgentBundleRegistry, BundleError, carried_bundles, with_bundles

    names = carried_bundles(agent)
    if not names:
        return skills, agents
    registry, found = AgentBundleRegistry.default(), []
    for name in names:
        try:
            bundle = registry.get(name)
        except BundleError as exc:
            raise RuntimeSetupError(str(exc)) from exc
        if bundle is None:
            raise RuntimeSetupError(f"{agent.source}: no bundle named {name!r} is installed "
                                    "(aimon bundles list)")
        notices.extend(bundle.warnings)
        found.append(bundle)
    return with_bundles(skills, agents, found)


def choose_model(flags: RuntimeFlags, settings: LoadedSettings, agent: AgentDefinition
                 ) -> ProviderChoice:
    """Choose provider and model: flags, then settings and environment, then the agent's."""
    from aimon_core.llm import ModelConfigError, agent_model, choose_provider, probe_ollama

    merged = settings.settings
    profile, env = _account(flags, settings)
    try:
        choice = choose_provider(
            provider=flags.provider or (profile.provider if profile else merged.provider),
            model=flags.model or (profile and profile.model) or merged.model,
            base_url=flags.base_url or (profile and profile.base_url) or merged.base_url,
            env=env,
            # Tests and CI switch the local-server probe off so a stray Ollama cannot answer.
            probe_local=(lambda: None) if os.environ.get("AIMON_NO_LOCAL_PROBE") else probe_ollama,
        )
    except ModelConfigError as exc:
        raise RuntimeSetupError(exc.message) from exc
    if merged.model or os.environ.get("AIMON_MODEL") or choice.detected_local \
            or (profile and profile.model):
        return choice
    return replace(choice, model=agent_model(agent.model.name, choice.provider, choice.model))


def _account(flags: RuntimeFlags, settings: LoadedSettings
             ) -> tuple[Profile | None, dict[str, str]]:
    """Return the profile asked for and the environment whose provider keys are found
    store → environment → settings (`aimon_core.credentials`)."""
    from aimon_core.credentials import (
        CredentialError,
        LocalCredentialStore,
        ProfileError,
        Profiles,
        provider_environment,
    )

    try:
        profile = Profiles.default().get(flags.profile) if flags.profile else None
        env = provider_environment(os.environ, store=LocalCredentialStore.default(),
                                   settings_env=settings.settings.env, profile=profile)
    except (CredentialError, ProfileError) as exc:
        raise RuntimeSetupError(str(exc)) from exc
    return profile, env


def permission_rules(flags: RuntimeFlags, settings: LoadedSettings
                     ) -> tuple[PermissionRules, tuple[Path, ...]]:
    """Return the settings' rules merged with the flags', and the extra folders.

    Raises RuleError if a rule does not parse.
    """
    from aimon_core.permission import PermissionRules

    permissions = settings.settings.permissions
    flag_rules = PermissionRules.parse(allow=flags.allowed, deny=flags.disallowed)
    return (permissions.rules().merged(flag_rules),
            tuple(Path(p) for p in permissions.additional_directories))


def check_rule_tools(flags: RuntimeFlags, settings: LoadedSettings, known: Collection[str]
                     ) -> list[str]:
    """Check that each rule names a tool of the runtime; return warnings for allow rules.

    `known` are the runtime's tool names (every name its providers may give, a library
    user's own tools included). A deny or ask rule that names no tool would never match and
    leave the user unprotected: RuntimeSetupError, naming the file and key (or the flag).
    """
    from aimon_core.permission import PermissionRules, parse_rule, unknown_tool

    for rule in PermissionRules.parse(deny=flags.disallowed).deny:
        if (problem := unknown_tool(rule, known)) is not None:
            raise RuntimeSetupError(f"invalid permission rule {rule.text!r}: "
                                    f"--disallowed-tools would never match it: {problem}")
    warnings = []
    for kind, key, text, where in settings.rule_sources():
        problem = unknown_tool(parse_rule(text), known)
        if problem is None:
            continue
        if kind == "allow":
            warnings.append(f"{where}: {key}: rule {text!r} never matches: {problem}")
        else:
            raise RuntimeSetupError(f"{where}: {key}: rule {text!r} would never match: {problem}")
    return warnings


def build_policy(project_root: Path, flags: RuntimeFlags, settings: LoadedSettings,
                 runtime_id: str, agent_scope: str) -> tuple[PermissionPolicy, list[str]]:
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
        rules, extra_dirs = permission_rules(flags, settings)
        mode = (parse_mode(flags.permission_mode) if flags.permission_mode
                else permissions.default_mode)
        agent_store = AgentApprovalStore(agent_approvals_path(user_data_dir(), runtime_id))
        policy = PermissionPolicy(rules, mode, project_root, agent=agent_store,
                                  extra_dirs=extra_dirs, agent_scope=agent_scope)
    except (RuleError, PermissionModeError, ValueError) as exc:
        raise RuntimeSetupError(str(exc)) from None
    return policy, [agent_store.problem] if agent_store.problem else []


def hook_specs(settings: LoadedSettings) -> tuple[CommandHookSpec, ...]:
    """Return the command hooks of every settings file; RuntimeSetupError if one is broken."""
    from aimon_core.hook import HookConfigError

    try:
        return settings.hook_specs()
    except HookConfigError as exc:
        raise RuntimeSetupError(str(exc)) from None


def build_hooks(settings: LoadedSettings, project_root: Path) -> HookRegistry:
    """Return a hook registry holding the command hooks of every loaded settings file.

    What the hooks answer is redacted of every credential the settings and environment name.
    """
    from aimon_core.config import known_secrets
    from aimon_core.hook import HookRegistry

    return HookRegistry(hook_specs(settings), project_dir=project_root,
                        secrets=known_secrets(settings.settings, os.environ))
