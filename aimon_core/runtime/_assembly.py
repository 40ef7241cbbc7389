"""AgentAssembly: a built agent runtime with its policy, hooks, settings and commands."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from aimon_core.runtime._configure import check_rule_tools, hook_specs, permission_rules
from aimon_core.runtime._parts import RuntimeFlags, RuntimeSetupError

if TYPE_CHECKING:
    from aimon_core.agent import AgentExecutor, AgentRuntime
    from aimon_core.command import CommandRegistry
    from aimon_core.config import LoadedSettings
    from aimon_core.hook import HookRegistry
    from aimon_core.live import LiveSession
    from aimon_core.mcp import MCPServers
    from aimon_core.permission import PermissionPolicy
    from aimon_core.runtime._extensions import Extensions
    from aimon_core.runtime._sandbox import SandboxSetup
    from aimon_core.runtime._workflows import RuntimeWorkflows
    from aimon_core.session import SessionStore
    from aimon_core.shell import SecretPairs
    from aimon_core.tools import ToolContext


@dataclass(slots=True, kw_only=True)
class AgentAssembly:
    """The agent-runtime scope: what `build_runtime` made, shared by the agent's sessions.

    It holds the runtime the executor uses, the permission policy (rules, mode, agent-scope
    approvals), the hooks, the settings, the slash commands, the MCP servers and the work
    that outlives a turn (background subagents); nothing of any one session. Whoever built it
    closes it (`aclose`, or `async with`). Settings reloads change it in place
    (`apply_settings`), so every session sees them.
    """

    project_root: Path
    flags: RuntimeFlags
    runtime: AgentRuntime
    policy: PermissionPolicy
    hooks: HookRegistry
    settings: LoadedSettings
    notices: list[str] = field(default_factory=list)
    commands: CommandRegistry | None = None
    # The settings' MCP servers (None: none configured); started by `start_background`.
    mcp: MCPServers | None = None
    mcp_started: bool = False
    # Work the runtime started that outlives a turn (background subagent tasks), closed last.
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # Every tool name the runtime's providers may give: what its rules must name.
    tool_names: frozenset[str] = frozenset()
    # The OS sandbox of the shell commands, as the settings set it up (None: not built here).
    sandbox: SandboxSetup | None = None
    # The project's workflows and the runtime's runner of them (None: not built here).
    workflows: RuntimeWorkflows | None = None
    # The key the model client was built with: one stored by `aimon auth login` is in no
    # environment, and is redacted all the same.
    client_secrets: SecretPairs = ()
    # Its skills and subagents (None: a caller's own providers replace them).
    extensions: Extensions | None = None
    # What runs each execution of its sessions and forks: the Orca executor inside the
    # interceptors (the cost ledger, tracing, a library user's); None: the Orca executor.
    executor: AgentExecutor | None = None
    # How many background subagent tasks run now, and what a session's running turn has
    # spent so far (a status line shows them).
    running_tasks: Callable[[], int] = lambda: 0
    turn_cost: Callable[[str], float] = lambda _: 0.0
    _secrets: tuple[LoadedSettings | None, SecretPairs] = field(
        default=(None, ()), init=False, repr=False)

    def __post_init__(self) -> None:
        if self.commands is None:
            from aimon_core.command import default_registry

            self.commands = default_registry()

    @property
    def secrets(self) -> SecretPairs:
        """Return every credential the runtime knows of: in aimon's environment, the settings'
        `env` and the MCP entries (redacted from all the model sees; reloads included)."""
        loaded, secrets = self._secrets
        if loaded is not self.settings:
            from aimon_core.config import known_secrets
            from aimon_core.shell import merge_secrets

            secrets = merge_secrets(known_secrets(self.settings.settings, os.environ),
                                    self.client_secrets)
            self._secrets = (self.settings, secrets)
        return secrets

    def tool_context(self, env: Mapping[str, str] | None = None, *, root: Path | None = None,
                     policy: PermissionPolicy | None = None,
                     sandbox: SandboxSetup | None = None) -> ToolContext:
        """Return a ToolContext on the local file system and shell, in the project (or in
        `root`, with the `policy` and `sandbox` made for it: a workflow task's worktree)."""
        from aimon_core.filesystem import LocalFileSystem
        from aimon_core.permission import read_filter
        from aimon_core.runtime._sandbox import shell_sandbox
        from aimon_core.shell import LocalShell
        from aimon_core.tools import ToolContext, ToolState

        root = root or self.project_root
        policy = policy or self.policy
        return ToolContext(
            project_root=root, cwd=root, fs=LocalFileSystem(root),
            shell=LocalShell(env=self.settings.settings.env if env is None else env,
                             passthrough=self.settings.settings.shell_env_passthrough,
                             sandbox=shell_sandbox(sandbox or self.sandbox, policy)),
            state=ToolState(), agent_name=self.runtime.agent.name, secrets=self.secrets,
            # Grep and Glob skip what Read deny rules cover; reloaded rules apply at once.
            path_filter=read_filter(lambda: policy.rules, root),
        )

    async def __aenter__(self) -> AgentAssembly:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def open_session(self, store: SessionStore | None = None, *,
                           session_id: str | None = None, holder: str | None = None
                           ) -> LiveSession:
        """Open a new session (or resume `session_id`) on this runtime.

        `store` defaults to the file store under aimon's data folder. The session keeps its
        own turn and session approvals (those on its record); slash commands typed as input
        run with this runtime's policy and settings. The caller closes the session.
        """
        from aimon_core.compact import compaction_settings
        from aimon_core.live import LiveSession, LiveSessionOptions
        from aimon_core.runtime._sandbox import bind_session

        store = store if store is not None else await asyncio.to_thread(default_store)
        config = self.settings.settings.compaction
        compaction = compaction_settings(
            threshold=config.threshold, context_window=config.context_window,
            result_limit_tokens=config.tool_result_limit_tokens, environ=os.environ)
        options = LiveSessionOptions(
            commands=self.commands, scope=self, compaction=compaction,
            prompt_expanders=(self._attach_mcp_resources,) if self.mcp is not None else (),
            # --model beats a resumed session's /model.
            model=self.runtime.model if self.flags.model else None, mentions=True)
        if self.executor is not None:
            options = dataclasses.replace(options, executor=self.executor)
        live = await LiveSession.open(self.runtime, store, self.tool_context(),
                                      session_id=session_id, holder=holder, options=options)
        bind_session(live)  # the sandbox's network questions go to this session
        return live

    def _commands(self) -> CommandRegistry:
        assert self.commands is not None
        return self.commands

    def apply_settings(self, loaded: LoadedSettings, on_error: Callable[[Exception], None]
                       ) -> list[str]:
        """Make reloaded settings take effect; return notes for the user.

        Permission rules, additional directories and hooks are replaced; the mode changes when
        the settings' defaultMode changed (a permission-mode flag wins). The model and the env
        of running sessions stay as they were (a note says so). Problems go to ``on_error``.
        """
        from aimon_core.permission import PermissionModeError, RuleError

        new, old = loaded.settings, self.settings.settings
        notes: list[str] = []
        try:
            rules, extra_dirs = permission_rules(self.flags, loaded)
            notes.extend(check_rule_tools(self.flags, loaded, self.tool_names))
            specs = hook_specs(loaded)
        except (RuleError, RuntimeSetupError) as exc:
            on_error(exc)
            return notes
        self.policy.set_rules(rules, extra_dirs=extra_dirs)
        if (self.flags.permission_mode is None
                and new.permissions.default_mode != old.permissions.default_mode):
            try:
                self.policy.set_mode(new.permissions.default_mode)
                notes.append(f"permission mode is now {self.policy.mode.value}")
            except PermissionModeError as exc:
                on_error(exc)
        self.hooks.replace_commands(specs)
        self.settings = loaded
        self.hooks.secrets = self.secrets
        if (new.model, new.provider, new.base_url) != (old.model, old.provider, old.base_url):
            notes.append("model changes take effect when aimon starts again")
        if new.env != old.env:
            notes.append("env changes apply to new sessions: /clear starts one")
        if new.mcp_servers != old.mcp_servers:
            notes.append("MCP server changes take effect when aimon starts again")
        if new.sandbox != old.sandbox:
            notes.append("sandbox changes take effect when aimon starts again")
        return notes

    def start_background(self, notify: Callable[[str], None] | None = None,
                         commands: tuple[CommandRegistry, ...] = ()) -> None:
        """Start the MCP servers without waiting for them (front ends: after the first prompt).

        Their tools join the runtime as each connects; their prompts become slash commands in
        this assembly's registry and in `commands` (the REPL's). `notify` hears about servers
        that stop and restart. Call inside the event loop; calling again does nothing.
        """
        if self.mcp is None or self.mcp_started:
            return
        from aimon_core.mcp import bind_extras

        self.mcp_started = True
        if notify is not None:
            self.mcp.notify = notify
        registries = (self._commands(), *commands)
        bind_extras(self.mcp, self.runtime.tools, lambda: registries)
        self.mcp.start()

    async def _attach_mcp_resources(self, prompt: str) -> str:
        """Append the resources `@server:uri` mentions name; say which could not be read.

        A rule denying the whole server (`mcp__github`) holds here too: its resource is not
        read, and the prompt says so.
        """
        from aimon_core.mcp import attach_resources
        from aimon_core.permission import Verdict, decide_server

        if self.mcp is None or "@" not in prompt:
            return prompt

        def refused(server: str) -> str | None:
            decision = decide_server(server, self.policy.rules)
            return decision.reason if decision and decision.verdict is Verdict.DENY else None

        expanded, problems = await attach_resources(self.mcp, prompt, refused)
        notes = "".join(f"\n[could not attach {problem}]" for problem in problems)
        return expanded + notes

    async def aclose(self) -> None:
        """Stop background tasks and MCP servers; release the model client's connections."""
        for close in self.closers:
            await close()
        if self.mcp is not None:
            await self.mcp.aclose()
        await self.runtime.client.aclose()


def default_store() -> SessionStore:
    """Return the session store under aimon's data folder (AIMON_HOME moves it)."""
    from aimon_core.session import file_session_store

    return file_session_store()
