"""build_runtime: the one place that assembles an agent from a project, its settings and flags.

Print mode, the REPL, subagent and skill forks, and library callers all ask for a runtime here
(or through `AgentRuntimeRegistry`): find the agent definition (built-in < user < project),
choose provider and model, build the permission policy, the hooks, the skills and subagents,
the tools from the tool providers, and return them together as an `AgentAssembly`. Each part
is made whole, with what it needs, in that order: nothing is wired afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.runtime._assembly import AgentAssembly
from aimon_core.runtime._configure import (
    build_hooks,
    build_policy,
    carry_bundles,
    check_rule_tools,
    choose_model,
    find_agent,
    load_runtime_settings,
)
from aimon_core.runtime._extension_tools import (
    SKILL_TOOL_NAMES,
    SUBAGENT_TOOL_NAMES,
    SkillToolProvider,
    SubagentToolProvider,
)
from aimon_core.runtime._extensions import Extensions, load_extension_registries
from aimon_core.runtime._fork import ForkBase
from aimon_core.runtime._parts import NO_FLAGS, NO_PARTS, RuntimeFlags, RuntimeParts
from aimon_core.runtime._tooling import agent_tools, lazy_schemas, tool_names
from aimon_core.runtime._workflows import (
    WORKFLOW_TOOL_NAMES,
    ForkTasks,
    RuntimeWorkflows,
    WorkflowScope,
)

if TYPE_CHECKING:
    from aimon_core.agent import AgentDefinition
    from aimon_core.command import CommandRegistry
    from aimon_core.config import LoadedSettings
    from aimon_core.memory import MemoryBook
    from aimon_core.permission import PermissionPolicy
    from aimon_core.tools import ToolProvider


def build_runtime(project_root: Path, *, flags: RuntimeFlags = NO_FLAGS,
                  settings: LoadedSettings | None = None,
                  parts: RuntimeParts = NO_PARTS) -> AgentAssembly:
    """Assemble an agent for `project_root`: its model client, tools, policy and hooks.

    Settings are loaded from the project and user files when not given. Blocking (it reads
    files and imports the provider SDK): call it off the event loop (`asyncio.to_thread`).
    Raises RuntimeSetupError with a message that says what to fix.
    """
    from aimon_core.agent import AgentRuntime, AgentRuntimeId, OrcaExecutor
    from aimon_core.llm import InterceptingLLMClient, ModelSettings, RedactingClient, make_client
    from aimon_core.observe import InterceptingAgentExecutor, observe_runtime
    from aimon_core.permission import interactive_gate, restricted_gate
    from aimon_core.session import project_key
    from aimon_core.shell import MIN_SECRET_LENGTH
    from aimon_core.tools import (
        TOOL_SEARCH,
        ConcurrencyBehavior,
        SchemaGate,
        builtin_providers,
        provided_names,
        tool_list_notes,
    )

    root = Path(project_root).resolve()
    _warm_first_call()
    if settings is None:
        settings = load_runtime_settings(root, flags, trust_all=parts.trust_all)
    from aimon_core.config import own_read_filter

    # What aimon reads by itself (agents, skills, commands) obeys the path deny rules too.
    readable = own_read_filter(settings, root, flags.disallowed)
    agent = parts.agent_definition or find_agent(flags.agent, root, readable)
    notices = [*agent.warnings, *settings.warnings]
    client_secrets: tuple[tuple[str, str], ...] = ()
    if parts.client is not None:
        client, model = parts.client, parts.model or agent.model.name or "scripted"
    else:
        choice = choose_model(flags, settings, agent)
        if choice.detected_local:
            notices.append(f"No API key configured: using the local model server at "
                           f"{choice.base_url} (model {choice.model}).")
        client, model = make_client(choice), choice.model
        if choice.api_key and len(choice.api_key) >= MIN_SECRET_LENGTH:
            client_secrets = ((f"{choice.provider.upper()}_API_KEY", choice.api_key),)
    # The last wall: no request leaves with a credential the runtime knows of (the assembly
    # keeps the list, and follows settings reloads). Forks borrow this client too.
    client = RedactingClient(client, lambda: assembly.secrets)
    # The cost ledger (and its caps) and tracing see every call: turns, forks, summaries.
    observed = observe_runtime(root, agent.name, settings.settings.observe,
                               lambda: assembly.settings.settings.observe)
    client = InterceptingLLMClient(client, (*observed.model, *parts.model_interceptors))
    notices.extend(observed.notices)
    executor = InterceptingAgentExecutor(OrcaExecutor(),
                                         (*observed.execution, *parts.interceptors))
    # Agent-scope approvals belong to the agent in this project, never to every project.
    runtime_id = AgentRuntimeId.of(agent.name, project_key(str(root)))
    policy, notes = build_policy(root, flags, settings, str(runtime_id),
                                 agent_scope=f"agent {agent.name} in {root}")
    notices.extend(notes)
    from aimon_core.runtime._sandbox import sandbox_setup

    sandbox = sandbox_setup(settings.settings.sandbox, policy, notices)
    hooks = build_hooks(settings, root)
    from aimon_core.memory import MemoryBook, default_store, owner_for

    memory = MemoryBook(parts.memory or default_store(), owner_for(root, agent.name))
    domains = _domain_providers(root, memory)
    # The one list of the runtime's tools: every name its providers may give, and the
    # caller's own tools; rules and tool lists are checked against it.
    if parts.providers is None:
        known = provided_names((*builtin_providers(), *domains), parts.tools) | {
            *SKILL_TOOL_NAMES, *SUBAGENT_TOOL_NAMES, *WORKFLOW_TOOL_NAMES, TOOL_SEARCH}
    else:
        known = provided_names(parts.providers, parts.tools) | {TOOL_SEARCH}
    notices.extend(check_rule_tools(flags, settings, known))
    # Skills and subagents load once per runtime (~30 ms for 60 of each, off the event loop).
    skills, agents = load_extension_registries(root, readable=readable)
    skills, agents = carry_bundles(agent, skills, agents, notices)
    model_settings = ModelSettings()
    forks = ForkBase(project_root=root, client=client, model=model, settings=model_settings,
                     policy=policy, hooks=hooks, permission_mode=lambda: policy.mode.value,
                     restrictions=_restrictions(agent), agent_name=agent.name, tools=agent.tools,
                     providers=domains, executor=executor, prices=observed.prices)
    extensions = Extensions(project_root=root, skills=skills, agents=agents,
                            runtime_id=str(runtime_id), tool_names=known, forks=forks)
    notices.extend(extensions.notices())
    # Workflow tasks are forks too; the runner is made on first use, closed with the runtime.
    workflows = RuntimeWorkflows(project_root=root, readable=readable,
                                 scope=parts.workflows or WorkflowScope(),
                                 tasks=ForkTasks(forks, agents, lambda: assembly))
    providers = parts.providers
    if providers is None:
        providers = (*builtin_providers(), SkillToolProvider(extensions),
                     SubagentToolProvider(extensions), workflows.provider(), *domains)
    tools, restrictions = agent_tools(agent, root, providers, parts.tools)
    lazy_schemas(tools, settings.settings, model, client.provider, agent)
    notices.extend(f"{agent.source}: {note}" for note in tool_list_notes(agent.tools or (),
                                                                          known))
    gate = restricted_gate(interactive_gate(policy), restrictions, project_root=root,
                           agent=agent.name)
    from aimon_core.context import CallableProvider, ContextSet, default_providers
    from aimon_core.memory import MemoryProvider

    runtime = AgentRuntime(
        agent=agent, client=client, model=model, tools=tools, gate=gate,
        settings=model_settings, hooks=hooks, id=runtime_id,
        permission_mode=lambda: policy.mode.value,
        concurrency=ConcurrencyBehavior(settings.settings.tools.concurrency or "parallel"),
        schema_gate=SchemaGate(settings.settings.tools.schema_gate or "strict"),
        context=ContextSet(default_providers(
            CallableProvider("tasks", lambda ctx: extensions.tasks.running_text()),
            MemoryProvider(memory))),
        prices=observed.prices,
    )
    assembly = AgentAssembly(project_root=root, flags=flags, runtime=runtime, policy=policy,
                             hooks=hooks, settings=settings, notices=notices,
                             commands=_commands(extensions, notices, root, readable, workflows,
                                                memory),
                             mcp=mcp_servers(settings, tools, policy, agent), tool_names=known,
                             sandbox=sandbox, workflows=workflows,
                             client_secrets=client_secrets,
                             # Background subagents and workflow runs end with the runtime.
                             closers=[extensions.tasks.close, workflows.aclose,
                                      *observed.closers],
                             extensions=extensions if parts.providers is None else None,
                             executor=executor,
                             running_tasks=lambda: sum(
                                 not t.task.done() for t in extensions.tasks.all()),
                             turn_cost=observed.turn_cost)
    return assembly


def _domain_providers(root: Path, memory: MemoryBook) -> tuple[ToolProvider, ...]:
    """Return the tools of memory, the web and the knowledge store (forks get them too)."""
    from aimon_core.knowledge import LazyKnowledge, knowledge_tools, project_knowledge
    from aimon_core.memory import memory_tools
    from aimon_core.web import default_web_tools

    return (memory_tools(memory), default_web_tools(),
            knowledge_tools(LazyKnowledge(lambda: project_knowledge(root))))


def reload_extensions(assembly: AgentAssembly) -> list[str]:
    """Read the skills, subagents and Markdown commands of `assembly` again (a file was added
    or edited while it runs); return what could not be loaded. Blocking: run it in a thread.

    The Skill and Task tools (whose descriptions list them) and the slash commands change in
    place, so every session offers the new ones from its next model call and command.
    """
    from aimon_core.config import own_read_filter
    from aimon_core.tools import ToolProviderContext

    extensions = assembly.extensions
    if extensions is None:
        return []
    root, agent = assembly.project_root, assembly.runtime.agent
    readable = own_read_filter(assembly.settings, root, assembly.flags.disallowed)
    extensions.reload(*load_extension_registries(root, readable=readable))
    wanted = set(tool_names(agent.tools)) if agent.tools is not None else None
    context = ToolProviderContext(project_root=root, agent_name=agent.name)
    tools = assembly.runtime.tools
    for provider in (SkillToolProvider(extensions), SubagentToolProvider(extensions)):
        for name in provider.names:
            tools.remove(name)
        for tool in provider.tools(context):
            if wanted is None or tool.name in wanted:
                tools.add(tool)
    assert assembly.commands is not None
    for old in assembly.commands.custom():
        if not old.origin.startswith("MCP server"):  # the servers' prompts stay
            assembly.commands.unregister(old.name)
    notes = extensions.notices()
    _add_commands(assembly.commands, extensions, notes, root, readable)
    return notes


def _restrictions(agent: AgentDefinition) -> dict[str, tuple[str, ...]]:
    """Return the agent's tool patterns (checked again, with a message, by `agent_tools`)."""
    from aimon_core.permission import RuleError, tool_restrictions

    if agent.tools is None:
        return {}
    try:
        return tool_restrictions(agent.tools)
    except RuleError:
        return {}


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


def _commands(extensions: Extensions, notices: list[str], root: Path,
              readable: Callable[[Path], bool] | None = None,
              workflows: RuntimeWorkflows | None = None,
              memory: MemoryBook | None = None) -> CommandRegistry:
    """Return the system commands with /skills, /workflow, /memory and the rest, one command
    per skill, and the Markdown commands of `.aimon/commands/` and `.claude/commands/`
    (skills win a name, but for aimon's built-in ones)."""
    from aimon_core.command import default_registry

    registry = default_registry(extensions, workflows)
    if memory is not None:
        from aimon_core.command import memory_command

        registry.register(memory_command(memory), system=True)
    _add_commands(registry, extensions, notices, root, readable)
    return registry


def _add_commands(registry: CommandRegistry, extensions: Extensions, notices: list[str],
                  root: Path, readable: Callable[[Path], bool] | None) -> None:
    """Register a command per skill, then the Markdown commands (skills win a name, but for
    aimon's built-in ones)."""
    from aimon_core.command import CommandNameError, custom_commands
    from aimon_core.config import claude_user_dir

    for command in extensions.slash_commands():
        try:
            registry.register(command)
        except CommandNameError as exc:
            notices.append(f"skill {command.name!r} has no slash command: {exc} "
                           f"(use /skill {command.name})")
    markdown, notes = custom_commands(root, registry.names(), claude_user=claude_user_dir(),
                                      readable=readable, replaceable=extensions.builtin_skills())
    notices.extend(notes)
    for command in markdown:
        registry.register(command)


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

    wanted = set(tool_names(agent.tools)) if agent.tools is not None else None

    denied = set(tool_names(agent.disallowed_tools))

    def allow(name: str) -> bool:
        if name in denied or any(name.startswith(d + "__") for d in denied):
            return False
        return wanted is None or name in wanted or any(
            name.startswith(w + "__") for w in wanted if w.startswith("mcp__"))

    from aimon_core.config import known_secrets

    return MCPServers(settings.settings.mcp_servers, tools=tools, allow=allow,
                      roots=lambda: (policy.project_root, *policy.extra_dirs),
                      secrets=known_secrets(settings.settings, os.environ))
