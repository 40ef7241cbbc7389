"""Turn command-line options into an AgentRuntime and a ToolContext."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.agent import (
    AgentDefinition,
    AgentDefinitionError,
    AgentRuntime,
    ToolGate,
    load_agent_file,
    load_builtin_agent,
)
from aimon_core.llm import ModelSettings
from aimon_core.tools import ToolContext

if TYPE_CHECKING:
    from aimon_core.llm import ProviderChoice


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
    gate: ToolGate | None = None


def find_agent(name: str | None, project_root: Path) -> AgentDefinition:
    """Return the named agent from the project, the user config, or the built-ins."""
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


def build_runtime(options: RuntimeOptions) -> tuple[AgentRuntime, list[str]]:
    """Choose the model, load the agent and tools; return the runtime and notices for the user."""
    from aimon_core.llm import ModelConfigError, choose_provider, make_client
    from aimon_core.tools import ToolRegistry
    from aimon_core.tools.builtin import builtin_tools

    agent = find_agent(options.agent, options.project_root)
    notices = list(agent.warnings)
    flags = options.model
    try:
        choice = choose_provider(
            provider=flags.provider,
            model=flags.model,
            base_url=flags.base_url,
            env=os.environ,
            # Tests and CI switch the local-server probe off so a stray Ollama cannot answer.
            **({"probe_local": lambda: None} if os.environ.get("AIMON_NO_LOCAL_PROBE") else {}),
        )
    except ModelConfigError as exc:
        raise SetupError(exc.message) from exc
    choice = _agent_model(choice, agent, flags)
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
    runtime = AgentRuntime(
        agent=agent,
        client=make_client(choice),
        model=choice.model,
        tools=tools,
        settings=ModelSettings(),
        **({"gate": options.gate} if options.gate is not None else {}),
    )
    return runtime, notices


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


def make_tool_context(
    project_root: Path, session_id: str = "", agent_name: str = "default"
) -> ToolContext:
    """Return a ToolContext on the local file system and shell."""
    from aimon_core.filesystem import LocalFileSystem
    from aimon_core.shell import LocalShell
    from aimon_core.tools._state import ToolState

    return ToolContext(
        project_root=project_root,
        cwd=project_root,
        fs=LocalFileSystem(project_root),
        shell=LocalShell(),
        state=ToolState(),
        session_id=session_id,
        agent_name=agent_name,
    )
