"""build_runtime: the one place that assembles an agent from a project, its settings and flags.

Print mode, the REPL, subagent and skill forks, and library callers all ask for a runtime here
(or through `AgentRuntimeRegistry`): find the agent definition (built-in < user < project),
choose provider and model, build the permission policy, the hooks, the tools from the tool
providers, and return them together as an `AgentAssembly`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimon_core.agent import AgentDefinition
    from aimon_core.command import CommandRegistry
    from aimon_core.config import LoadedSettings
    from aimon_core.hook import CommandHookSpec, HookRegistry
    from aimon_core.llm import LLMClient, ProviderChoice
    from aimon_core.permission import PermissionPolicy, PermissionRules
    from aimon_core.runtime._assembly import AgentAssembly
    from aimon_core.runtime._extensions import Extensions
    from aimon_core.tools import Tool, ToolProvider


class RuntimeSetupError(Exception):
    """The flags or configuration cannot build a runtime; the message says how to fix it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeFlags:
    """What a caller (the command line, a library user) asks for beyond the settings files.

    None means "not given": the settings, the environment and the agent decide.
    """

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    agent: str | None = None
    allowed: tuple[str, ...] = ()
    disallowed: tuple[str, ...] = ()
    permission_mode: str | None = None

    def settings_layer(self) -> dict[str, Any]:
        """Return the model flags in the shape of a settings file (None: not given)."""
        return {"model": self.model, "provider": self.provider, "base_url": self.base_url}


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeParts:
    """Extra parts a caller adds to what the settings build (library users, tests).

    `tools` are added to the built-in ones; `providers` replace the built-in providers;
    `client` replaces the model client chosen from settings and environment (then `model`
    names the model, default the agent's).
    """

    tools: tuple[Tool, ...] = ()
    providers: tuple[ToolProvider, ...] | None = None
    client: LLMClient | None = None
    model: str | None = None
    trust_all: bool = False
    agent_definition: AgentDefinition | None = None


NO_FLAGS = RuntimeFlags()
NO_PARTS = RuntimeParts()


def load_runtime_settings(project_root: Path, flags: RuntimeFlags = NO_FLAGS, *,
                          trust_all: bool = False) -> LoadedSettings:
    """Load user, project and local settings plus the flags; RuntimeSetupError if broken."""
    from aimon_core.config import SettingsError, TrustStore, load_settings

    try:
        return load_settings(project_root, flags=flags.settings_layer(),
                             trust_store=TrustStore(), trust_all=trust_all)
    except SettingsError as exc:
        raise RuntimeSetupError(str(exc)) from None


def find_agent(name: str | None, project_root: Path) -> AgentDefinition:
    """Return the named agent from the project, the user config, or the built-ins."""
    from aimon_core.agent import AgentDefinitionError, load_agent_file, load_builtin_agent
    from aimon_core.session import user_config_dir

    if name is None or name == "default":
        return load_builtin_agent("default")
    folders = (project_root / ".aimon" / "agents", project_root / ".claude" / "agents",
               user_config_dir() / "agents")
    for folder in folders:
        path = folder / f"{name}.md"
        if path.is_file():
            try:
                return load_agent_file(path)
            except AgentDefinitionError as exc:
                raise RuntimeSetupError(f"agent {name!r} cannot be loaded: {exc}") from exc
    try:
        return load_builtin_agent(name)
    except AgentDefinitionError:
        raise RuntimeSetupError(
            f"no agent named {name!r}: looked in {', '.join(str(f) for f in folders)} "
            "and the built-in agents") from None


def choose_model(flags: RuntimeFlags, settings: LoadedSettings, agent: AgentDefinition
                 ) -> ProviderChoice:
    """Choose provider and model: flags, then settings and environment, then the agent's."""
    from aimon_core.llm import ModelConfigError, choose_provider, probe_ollama

    merged = settings.settings
    try:
        choice = choose_provider(
            provider=merged.provider, model=merged.model, base_url=merged.base_url,
            env=os.environ,
            # Tests and CI switch the local-server probe off so a stray Ollama cannot answer.
            probe_local=(lambda: None) if os.environ.get("AIMON_NO_LOCAL_PROBE") else probe_ollama,
        )
    except ModelConfigError as exc:
        raise RuntimeSetupError(exc.message) from exc
    wanted = agent.model.name
    if wanted is None or merged.model or os.environ.get("AIMON_MODEL") or choice.detected_local:
        return choice
    implied = "anthropic" if wanted.startswith("claude") else (
        "openai" if wanted.startswith(("gpt", "o3", "o4")) else None)
    if implied not in (None, choice.provider):
        return choice
    return replace(choice, model=wanted)


def permission_rules(flags: RuntimeFlags, settings: LoadedSettings
                     ) -> tuple[PermissionRules, tuple[Path, ...]]:
    """Return the settings' rules merged with the flags', and the extra folders.

    Raises RuleError if a rule does not parse.
    """
    from aimon_core.permission import PermissionRules, RuleError, unknown_tool

    permissions = settings.settings.permissions
    flag_rules = PermissionRules.parse(allow=flags.allowed, deny=flags.disallowed)
    for rule in flag_rules.deny:
        # A deny flag that never matches would leave the user unprotected: fail closed.
        if (problem := unknown_tool(rule)) is not None:
            raise RuleError(rule.text, f"--disallowed-tools would never match it: {problem}")
    return (permissions.rules().merged(flag_rules),
            tuple(Path(p) for p in permissions.additional_directories))


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
    """Return a hook registry holding the command hooks of every loaded settings file."""
    from aimon_core.hook import HookRegistry

    return HookRegistry(hook_specs(settings), project_dir=project_root)


def build_runtime(project_root: Path, *, flags: RuntimeFlags = NO_FLAGS,
                  settings: LoadedSettings | None = None,
                  parts: RuntimeParts = NO_PARTS) -> AgentAssembly:
    """Assemble an agent for `project_root`: its model client, tools, policy and hooks.

    Settings are loaded from the project and user files when not given. Blocking (it reads
    files and imports the provider SDK): call it off the event loop (`asyncio.to_thread`).
    Raises RuntimeSetupError with a message that says what to fix.
    """
    from aimon_core.agent import AgentRuntime, AgentRuntimeId
    from aimon_core.llm import ModelSettings, make_client
    from aimon_core.permission import interactive_gate, restricted_gate
    from aimon_core.runtime._assembly import AgentAssembly
    from aimon_core.runtime._fork import capturing_gate
    from aimon_core.session import project_key

    root = Path(project_root).resolve()
    _warm_first_call()
    if settings is None:
        settings = load_runtime_settings(root, flags, trust_all=parts.trust_all)
    agent = parts.agent_definition or find_agent(flags.agent, root)
    notices = [*agent.warnings, *settings.warnings]
    if parts.client is not None:
        client, model = parts.client, parts.model or agent.model.name or "scripted"
    else:
        choice = choose_model(flags, settings, agent)
        if choice.detected_local:
            notices.append(f"No API key configured: using the local model server at "
                           f"{choice.base_url} (model {choice.model}).")
        client, model = make_client(choice), choice.model
    from aimon_core.runtime._extensions import load_extensions

    # Skills and subagents load once per runtime (~30 ms for 60 of each, off the event loop).
    extensions = load_extensions(root)
    notices.extend(extensions.notices())
    tools, restrictions, notes = _agent_tools(agent, root, parts, extensions)
    notices.extend(notes)
    agent = _with_listing(agent, extensions, tools)
    # Agent-scope approvals belong to the agent in this project, never to every project.
    runtime_id = AgentRuntimeId.of(agent.name, project_key(str(root)))
    policy, notes = build_policy(root, flags, settings, str(runtime_id),
                                 agent_scope=f"agent {agent.name} in {root}")
    notices.extend(notes)
    hooks = build_hooks(settings, root)
    gate = capturing_gate(restricted_gate(interactive_gate(policy), restrictions,
                                          project_root=root, agent=agent.name),
                          frozenset({"Skill", "Task"}))
    runtime = AgentRuntime(
        agent=agent, client=client, model=model, tools=tools, gate=gate,
        settings=ModelSettings(), hooks=hooks, id=runtime_id,
        permission_mode=lambda: policy.mode.value,
    )
    assembly = AgentAssembly(project_root=root, flags=flags, runtime=runtime, policy=policy,
                             hooks=hooks, settings=settings, notices=notices,
                             commands=_commands(extensions, notices, root),
                             mcp=mcp_servers(settings, tools, policy, agent))
    extensions.assembly = assembly
    assembly.closers.append(extensions.tasks.close)  # background subagents end with the runtime
    return assembly


def _warm_first_call() -> None:
    """Import tree-sitter and load the Bash grammar in a thread, now.

    It overlaps the SDK's import instead of adding to the first tool call (issue 13); the
    cache is the one the Bash parse uses. (jsonschema is not warmed: input that fits the
    built-in tools' schemas is accepted without it, `tools/_fastcheck.py`.)
    """
    import threading

    def warm() -> None:
        from aimon_core.permission import parse_command

        try:
            parse_command("true")
        except Exception:  # only a head start: the first call does the same and reports
            return

    threading.Thread(target=warm, name="aimon warm-up", daemon=True).start()


def _commands(extensions: Extensions, notices: list[str], root: Path) -> CommandRegistry:
    """Return the system commands with /skills and the rest, one command per skill, and the
    Markdown commands of `.aimon/commands/` and `.claude/commands/` (skills win a name)."""
    from aimon_core.command import CommandNameError, custom_commands, default_registry
    from aimon_core.config import claude_user_dir

    registry = default_registry(extensions)
    for command in extensions.slash_commands():
        try:
            registry.register(command)
        except CommandNameError as exc:
            notices.append(f"skill {command.name!r} has no slash command: {exc} "
                           f"(use /skill {command.name})")
    markdown, notes = custom_commands(root, registry.names(), claude_user=claude_user_dir())
    notices.extend(notes)
    for command in markdown:
        registry.register(command)
    return registry


def _with_listing(agent: AgentDefinition, extensions: Extensions, tools: Any
                  ) -> AgentDefinition:
    """Return the agent with the skills and subagents it may start listed in its prompt."""
    section = extensions.prompt_section(skills="Skill" in tools, agents="Task" in tools)
    if not section:
        return agent
    return replace(agent, prompt_template=f"{agent.prompt_template.rstrip()}\n\n{section}\n")


def _agent_tools(agent: AgentDefinition, root: Path, parts: RuntimeParts,
                 extensions: Extensions | None = None
                 ) -> tuple[Any, dict[str, tuple[str, ...]], list[str]]:
    """Return the agent's tool registry, its per-tool patterns, and notes about its list.

    With `extensions`, the Skill and subagent tools join the built-in providers.
    """
    from aimon_core.permission import RuleError, tool_restrictions
    from aimon_core.tools import (
        ToolProviderContext,
        ToolRegistry,
        builtin_providers,
        provided_tools,
    )

    providers = parts.providers if parts.providers is not None else builtin_providers()
    if extensions is not None and parts.providers is None:
        from aimon_core.runtime._extension_tools import SkillToolProvider, SubagentToolProvider

        providers = (*providers, SkillToolProvider(extensions), SubagentToolProvider(extensions))
    context = ToolProviderContext(project_root=root, agent_name=agent.name)
    tools = ToolRegistry((*provided_tools(providers, context), *parts.tools))
    if agent.tools is None:
        return tools, {}, []
    try:
        restrictions = tool_restrictions(agent.tools)
    except RuleError as exc:
        raise RuntimeSetupError(f"{agent.source}: the tool list has a bad entry: {exc}") from None
    names = _names(agent.tools)
    unknown = [name for name in names if name not in tools]
    notes = [f"{agent.source}: agent {agent.name!r} names tools aimon does not have: "
             f"{', '.join(unknown)}"] if unknown else []
    return tools.only(names), restrictions, notes


def _names(entries: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(entry.split("(", 1)[0].strip() for entry in entries))


def mcp_servers(settings: LoadedSettings, tools: Any, policy: PermissionPolicy,
                agent: AgentDefinition) -> Any:
    """Return the MCPServers of the settings' `mcpServers` (not started), or None if none.

    Their tools join `tools` as servers connect; an agent with a tool list gets the MCP tools
    it names (`mcp__server` names all of a server's). The servers' roots are the project and
    the additional directories.
    """
    if not settings.settings.mcp_servers:
        return None
    from aimon_core.mcp import MCPServers

    wanted = set(_names(agent.tools)) if agent.tools is not None else None

    def allow(name: str) -> bool:
        return wanted is None or name in wanted or any(
            name.startswith(w + "__") for w in wanted if w.startswith("mcp__"))

    return MCPServers(settings.settings.mcp_servers, tools=tools, allow=allow,
                      roots=lambda: (policy.project_root, *policy.extra_dirs))
