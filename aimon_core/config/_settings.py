"""The values of the settings tier: the merged view, its sources, and the errors of loading."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from aimon_core.config._sandbox import SandboxSettings
from aimon_core.observe import ObserveSettings
from aimon_core.permission import PermissionMode as PermissionMode
from aimon_core.permission import PermissionRules

if TYPE_CHECKING:
    from aimon_core.hook import CommandHookSpec

if TYPE_CHECKING:
    from aimon_core.config._mcp import MCPServerConfig

Provider = Literal["anthropic", "openai"]

PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai")
PERMISSION_MODES: tuple[str, ...] = tuple(mode.value for mode in PermissionMode)

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_$-]+")


class SettingsLayer(enum.Enum):
    """Where a setting came from; later layers override earlier ones.

    Claude Code's files sit just below aimon's of the same scope: `~/.claude/settings.json`
    below the user's, `.claude/settings.json` and `.claude/settings.local.json` below
    `.aimon/`'s.
    """

    CLAUDE_USER = "claude_user"
    USER = "user"
    CLAUDE_PROJECT = "claude_project"
    CLAUDE_LOCAL = "claude_local"
    PROJECT = "project"
    LOCAL = "local"
    # The MCP servers the user added for this project (`aimon mcp add`), in the user's data.
    LOCAL_MCP = "local_mcp"
    FLAGS = "flags"

    @property
    def is_claude(self) -> bool:
        """Tell whether the layer is one of Claude Code's settings files."""
        return self.value.startswith("claude_")


_FLAGS = "command-line flags"


class SettingsError(Exception):
    """A settings file (or the flags mapping) cannot be read, parsed or validated.

    `path` is None for command-line flags; `key` is the key path inside the file
    (``permissions.allow[2]``) or None when the whole file is at fault; `line` and `column`
    locate malformed JSON.
    """

    def __init__(
        self,
        *,
        path: Path | None,
        key: str | None,
        reason: str,
        display: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.path = path
        self.key = key
        self.reason = reason
        self.display = display or (str(path) if path is not None else "command-line flags")
        self.line = line
        self.column = column
        where = self.display
        if line is not None:
            where += f": line {line}, column {column}"
        if key is not None:
            where += f": {key}"
        super().__init__(f"{where}: {reason}")


def key_path(parent: str, key: str) -> str:
    """Append a mapping key to a key path, quoting keys that are not plain words."""
    part = key if _PLAIN_KEY.fullmatch(key) else f"[{key!r}]"
    if not parent:
        return part
    return parent + part if part.startswith("[") else f"{parent}.{part}"


@dataclass(frozen=True, slots=True, kw_only=True)
class HookCommandConfig:
    """One hook command as written in settings: ``{"type", "command", "timeout"?, ...}``.

    Args:
        async_: Claude Code's `async`: run without blocking the turn (its answer is ignored).
        status_message: Claude Code's `statusMessage`: shown while the hook runs.
        condition: Claude Code's `if`: a permission rule (`Bash(git *)`) the tool call must
            match for the hook to run.
    """

    type: str = "command"
    command: str
    timeout: float | None = None
    async_: bool = False
    status_message: str | None = None
    condition: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HookMatcherConfig:
    """One entry of an event's hook list: an optional tool matcher and its commands."""

    matcher: str | None = None
    hooks: tuple[HookCommandConfig, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionSettings:
    """Permission rules (as validated rule texts), the default mode and extra directories."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default_mode: PermissionMode = PermissionMode.DEFAULT
    additional_directories: tuple[Path, ...] = ()

    def rules(self) -> PermissionRules:
        """Return the parsed rules (the texts were validated when the settings were loaded)."""
        return PermissionRules.parse(allow=self.allow, ask=self.ask, deny=self.deny)


def _empty_hooks() -> Mapping[str, tuple[HookMatcherConfig, ...]]:
    return MappingProxyType({})


def _empty_env() -> Mapping[str, str]:
    return MappingProxyType({})


def _empty_servers() -> Mapping[str, MCPServerConfig]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionConfig:
    """The `compaction` settings; None leaves aimon's default.

    Args:
        threshold: compact when a request would pass this share of the window (0.1-1).
        context_window: the window in tokens, winning over the model registry.
        tool_result_limit_tokens: a tool result past this is saved to a file.
    """

    threshold: float | None = None
    context_window: int | None = None
    tool_result_limit_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSettings:
    """The `tools` settings; None leaves aimon's default.

    Args:
        concurrency: "parallel" (consecutive read-only calls run together) or "serial".
        search_threshold: past this share of the context window, the tools' schemas are not
            sent: their names are, and the model loads schemas with ToolSearch (0-1).
        schema_gate: "strict" (input that does not fit its schema is refused) or "warn".
    """

    concurrency: str | None = None
    search_threshold: float | None = None
    schema_gate: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """The merged settings of every layer that took effect."""

    model: str | None = None
    provider: Provider | None = None
    base_url: str | None = None
    permissions: PermissionSettings = field(default_factory=PermissionSettings)
    hooks: Mapping[str, tuple[HookMatcherConfig, ...]] = field(default_factory=_empty_hooks)
    env: Mapping[str, str] = field(default_factory=_empty_env)
    # Secret-named variables (..._TOKEN, ..._API_KEY) the model's commands may still see;
    # provider keys never pass (aimon_core.shell.model_env).
    shell_env_passthrough: tuple[str, ...] = ()
    # MCP servers by name (`mcpServers` of every layer and the project's `.mcp.json`).
    mcp_servers: Mapping[str, MCPServerConfig] = field(default_factory=_empty_servers)
    compaction: CompactionConfig = field(default_factory=CompactionConfig)
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    # Hard caps on spending, price overrides, what traces keep.
    observe: ObserveSettings = field(default_factory=ObserveSettings)

    def hooks_json(self) -> dict[str, list[dict[str, Any]]]:
        """Return the hooks in their settings-file shape, for `aimon_core.hook`'s parser."""
        return hooks_to_json(self.hooks)


def hooks_to_json(
    hooks: Mapping[str, tuple[HookMatcherConfig, ...]],
) -> dict[str, list[dict[str, Any]]]:
    """Convert validated hooks back to plain JSON data (fresh dicts and lists)."""
    result: dict[str, list[dict[str, Any]]] = {}
    for event, matchers in hooks.items():
        entries: list[dict[str, Any]] = []
        for group in matchers:
            entry: dict[str, Any] = {} if group.matcher is None else {"matcher": group.matcher}
            entry["hooks"] = [_command_json(command) for command in group.hooks]
            entries.append(entry)
        result[event] = entries
    return result


def _command_json(command: HookCommandConfig) -> dict[str, Any]:
    data: dict[str, Any] = {"type": command.type, "command": command.command}
    if command.timeout is not None:
        data["timeout"] = command.timeout
    if command.async_:
        data["async"] = True
    if command.status_message is not None:
        data["statusMessage"] = command.status_message
    if command.condition is not None:
        data["if"] = command.condition
    return data


@dataclass(frozen=True, slots=True, kw_only=True)
class SettingsSource:
    """One layer's file: whether it existed and whether all of it took effect.

    `trusted` is False when risky parts of a project file were withheld until the user
    trusts the folder; `path` is None for command-line flags.
    """

    path: Path | None
    layer: SettingsLayer
    loaded: bool
    trusted: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustRequest:
    """What a project folder holds that is not trusted yet, for the CLI to ask about.

    `what` says, one line each, what the items held back would do; `items` are the digests
    of everything trusting the folder now would trust (the items held back and those already
    trusted), for `TrustStore.trust`; `config_hash` identifies the question.
    """

    folder: Path
    config_hash: str
    what: tuple[str, ...]
    items: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadedSettings:
    """Merged settings, the files they came from, and a trust question if one is pending.

    `origin` maps key paths of the merged view (``model``, ``permissions.defaultMode``,
    ``permissions.allow[0]``, ``hooks.PreToolUse[1]``, ``env.NAME``) to the layer that set them.
    """

    settings: Settings
    sources: tuple[SettingsSource, ...]
    origin: Mapping[str, SettingsLayer]
    pending_trust: TrustRequest | None = None
    # Problems that did not stop loading (an allow rule naming an unknown tool), one line each.
    warnings: tuple[str, ...] = ()

    def hook_specs(self) -> tuple[CommandHookSpec, ...]:
        """Return the merged command hooks, typed, each naming the file that added it.

        Raises HookConfigError for an unknown event, an invalid matcher or an unusable hook.
        """
        from aimon_core.hook import group_specs

        paths = {source.layer: source.path for source in self.sources}
        specs: list[CommandHookSpec] = []
        for event, groups in self.settings.hooks.items():
            for index, group in enumerate(groups):
                key = f"{key_path('hooks', event)}[{index}]"
                path = paths.get(self.origin[key])
                specs.extend(group_specs(event, group.matcher, group.hooks, key=key,
                                         source=str(path) if path is not None else "flags"))
        return tuple(specs)

    def rule_sources(self) -> tuple[tuple[str, str, str, str], ...]:
        """Return each permission rule as (kind, key path, rule, the file that set it)."""
        paths = {source.layer: str(source.path) for source in self.sources}
        permissions = self.settings.permissions
        return tuple(
            (kind, key, text, paths.get(self.origin[key], _FLAGS) if key in self.origin
             else _FLAGS)
            for kind in ("allow", "ask", "deny")
            for index, text in enumerate(getattr(permissions, kind))
            for key in (f"permissions.{kind}[{index}]",))

    def hooks_by_source(self) -> tuple[tuple[SettingsSource, dict[str, list[dict[str, Any]]]], ...]:
        """Return the merged hooks split by the file that added them, in layer order."""
        grouped: dict[SettingsLayer, dict[str, list[HookMatcherConfig]]] = {}
        for event, groups in self.settings.hooks.items():
            for index, group in enumerate(groups):
                layer = self.origin[f"{key_path('hooks', event)}[{index}]"]
                grouped.setdefault(layer, {}).setdefault(event, []).append(group)
        return tuple(
            (source, hooks_to_json({e: tuple(g) for e, g in grouped[source.layer].items()}))
            for source in self.sources
            if source.layer in grouped
        )
