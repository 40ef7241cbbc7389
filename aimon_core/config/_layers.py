"""Layered settings: user < project < local < flags, merged key by key, gated by folder trust."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from aimon_core.config._observe import ObserveLayer, merge_observe
from aimon_core.config._sandbox import SandboxLayer, merge_sandbox
from aimon_core.config._settings import (
    CompactionConfig,
    HookMatcherConfig,
    LoadedSettings,
    PermissionSettings,
    Settings,
    SettingsLayer,
    SettingsSource,
    ToolSettings,
    TrustRequest,
    key_path,
)
from aimon_core.config._skill_trust import (
    describe_skill_hooks,
    repository_skill_hooks,
    skill_hooks_item,
)
from aimon_core.config._trust import (
    TrustStore,
    describe_risks,
    folder_key,
    remember_question,
    request_hash,
    split_risky,
    user_dir,
)
from aimon_core.config._validate import LayerValues, check_layer, read_layer
from aimon_core.permission import PathGuard, PermissionMode, PermissionRules, RuleError

SETTINGS_FILE = "settings.json"
LOCAL_SETTINGS_FILE = "settings.local.json"
PROJECT_DIR = ".aimon"
CLAUDE_DIR = ".claude"
_FLAGS_DISPLAY = "command-line flags"
_PROJECT_LAYERS = frozenset({
    SettingsLayer.CLAUDE_PROJECT, SettingsLayer.CLAUDE_LOCAL, SettingsLayer.PROJECT,
    SettingsLayer.LOCAL,
})


@dataclass(frozen=True, slots=True, kw_only=True)
class _Layer:
    layer: SettingsLayer
    path: Path | None
    values: LayerValues | None
    trusted: bool = True


def claude_user_dir() -> Path:
    """Return Claude Code's user folder: `$CLAUDE_CONFIG_DIR`, else `~/.claude`."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / CLAUDE_DIR


def settings_paths(project_root: Path | str) -> tuple[tuple[SettingsLayer, Path], ...]:
    """Return the file of each file layer, in precedence order.

    Claude Code's files come just below aimon's of the same scope: ~/.claude < user <
    .claude/settings.json < .claude/settings.local.json < .aimon/settings.json <
    .aimon/settings.local.json.
    """
    root = Path(project_root).absolute()
    project_dir, claude_dir = root / PROJECT_DIR, root / CLAUDE_DIR
    return (
        (SettingsLayer.CLAUDE_USER, claude_user_dir() / SETTINGS_FILE),
        (SettingsLayer.USER, user_dir() / SETTINGS_FILE),
        (SettingsLayer.CLAUDE_PROJECT, claude_dir / SETTINGS_FILE),
        (SettingsLayer.CLAUDE_LOCAL, claude_dir / LOCAL_SETTINGS_FILE),
        (SettingsLayer.PROJECT, project_dir / SETTINGS_FILE),
        (SettingsLayer.LOCAL, project_dir / LOCAL_SETTINGS_FILE),
    )


def load_settings(
    project_root: Path | str,
    *,
    flags: Mapping[str, Any] | None = None,
    trust_store: TrustStore,
    trust_all: bool = False,
) -> LoadedSettings:
    """Read every layer, withhold untrusted risky project settings, and merge the rest.

    Raise SettingsError if any file (or the flags mapping) is malformed: a broken file is
    never read as empty settings. `flags` has the shape of a settings file; None values in it
    mean "flag not given". `trust_all` trusts the folder without asking (tests, CI).
    """
    root = Path(project_root).absolute()
    read = [(layer, path, read_layer(path, _display(path, root),
                                     inside=root if layer in _PROJECT_LAYERS else None,
                                     claude=layer.is_claude))
            for layer, path in settings_paths(root)]
    # A missing Claude Code file is no layer at all: sources list what a user of aimon expects.
    layers = [_Layer(layer=layer, path=path, values=values) for layer, path, values in read
              if values is not None or not layer.is_claude]
    if flags is not None:
        values = check_layer(_drop_none(flags), path=None, display=_FLAGS_DISPLAY)
        layers.append(_Layer(layer=SettingsLayer.FLAGS, path=None, values=values))
    _add_mcp_json(layers, root)
    layers.extend(_local_mcp(root))
    layers, pending = _gate(layers, root, trust_store=trust_store, trust_all=trust_all)
    settings, origin = merge([(item.layer, item.values) for item in layers], root)
    sources = tuple(
        SettingsSource(
            path=item.path, layer=item.layer, loaded=item.values is not None, trusted=item.trusted
        )
        for item in layers
    )
    warnings = tuple(w for item in layers if item.values is not None for w in item.values.warnings)
    warnings += _reading_notes(layers, root)
    return LoadedSettings(
        settings=settings, sources=sources, origin=MappingProxyType(origin), pending_trust=pending,
        warnings=warnings,
    )


def own_read_filter(loaded: LoadedSettings, project_root: Path,
                    extra_deny: tuple[str, ...] = ()) -> PathGuard | None:
    """Return the settings' path deny rules as the filter of aimon's own reads; None if none.

    `extra_deny` are the deny rules of `--disallowed-tools`; one that does not parse is left
    to the policy, which reports it.
    """
    deny = loaded.settings.permissions.deny
    try:
        rules = PermissionRules.parse(deny=(*deny, *extra_deny))
    except RuleError:
        rules = PermissionRules.parse(deny=deny)
    guard = PathGuard(rules, project_root)
    return guard if guard else None


def _reading_notes(layers: list[_Layer], root: Path) -> tuple[str, ...]:
    """Say which Claude Code files were read, and name keys and hooks aimon does not use.

    One line for all Claude Code files (what a Claude Code project sees at every start), one
    line per aimon file with something unused.
    """
    notes: list[str] = []
    claude: list[str] = []
    for item in layers:
        if item.values is None or item.path is None:
            continue
        display = _display(item.path, root)
        unused = "; ".join((*item.values.unused, *item.values.skipped))
        if item.layer.is_claude:
            claude.append(f"{display} (not used by aimon: {unused})" if unused else display)
        elif unused:
            notes.append(f"{display}: not used by aimon: {unused}")
    if claude:
        notes.insert(0, f"read Claude Code settings: {', '.join(claude)}")
    return tuple(notes)


def _local_mcp(root: Path) -> list[_Layer]:
    """Return the layer of the MCP servers the user added for this project (no trust asked:
    they are the user's own)."""
    from aimon_core.config._mcp_local import local_mcp_path, local_servers

    servers = local_servers(root)
    if not servers:
        return []
    return [_Layer(layer=SettingsLayer.LOCAL_MCP, path=local_mcp_path(),
                   values=LayerValues(mcp_servers=servers))]


def _add_mcp_json(layers: list[_Layer], root: Path) -> None:
    """Fold the project's `.mcp.json` servers into the project layer (its entries win)."""
    from aimon_core.config._mcp import read_mcp_json

    servers = read_mcp_json(root)
    if not servers:
        return
    index = next(i for i, item in enumerate(layers) if item.layer is SettingsLayer.PROJECT)
    item = layers[index]
    own = item.values.mcp_servers if item.values is not None else ()
    mine = {name for name, _ in own}
    merged = (*((n, c) for n, c in servers if n not in mine), *own)
    values = item.values or LayerValues()
    layers[index] = _Layer(layer=item.layer, path=item.path, trusted=item.trusted,
                           values=dataclasses.replace(values, mcp_servers=merged))


def _gate(
    layers: list[_Layer], root: Path, *, trust_store: TrustStore, trust_all: bool
) -> tuple[list[_Layer], TrustRequest | None]:
    """Hold back each risky project item the user has not trusted as it reads now.

    Items already trusted stay in force; the question asks about the rest (and a forked
    skill's hooks that are repository code), and trusting it trusts every item present.
    """
    if trust_all:
        return layers, None
    trusted = trust_store.trusted_items(root)
    everything: list[str] = []
    what: list[str] = []
    gated: list[_Layer] = []
    for item in layers:
        if item.layer not in _PROJECT_LAYERS or item.values is None:
            gated.append(item)
            continue
        kept, digests = split_risky(item.values, trusted.__contains__, root)
        everything.extend(digests)
        held = [d for d in digests if d not in trusted]
        if held:
            what.extend(describe_risks(
                split_risky(item.values, set(held).__contains__, root)[0]))
        gated.append(_Layer(layer=item.layer, path=item.path, values=kept, trusted=not held))
    for skill in repository_skill_hooks(root):
        digest = skill_hooks_item(skill)
        everything.append(digest)
        if digest not in trusted:
            what.append(describe_skill_hooks(skill, root))
    pending = [d for d in everything if d not in trusted]
    if not pending:
        return gated, None
    request = TrustRequest(folder=Path(folder_key(root)), config_hash=request_hash(pending),
                           what=tuple(what), items=tuple(sorted(set(everything))))
    remember_question(request.folder, request.config_hash, request.items)
    return gated, request


def merge(
    layers: list[tuple[SettingsLayer, LayerValues | None]], root: Path
) -> tuple[Settings, dict[str, SettingsLayer]]:
    """Merge layers in order: scalars override, rule lists concatenate, env merges by name."""
    merged = _Merged(root=root)
    for layer, values in layers:
        if values is not None:
            merged.add(layer, values)
    return merged.settings(), merged.origin


_SCALARS = (
    ("model", "model"),
    ("provider", "provider"),
    ("base_url", "base_url"),
    ("default_mode", "permissions.defaultMode"),
    ("compaction_threshold", "compaction.threshold"),
    ("context_window", "compaction.contextWindow"),
    ("tool_result_limit_tokens", "compaction.toolResultLimitTokens"),
    ("tool_concurrency", "tools.concurrency"),
    ("tool_search_threshold", "tools.searchThreshold"),
    ("tool_schema_gate", "tools.schemaGate"),
)
_LISTS = (
    ("allow", "permissions.allow"),
    ("ask", "permissions.ask"),
    ("deny", "permissions.deny"),
    ("additional_directories", "permissions.additionalDirectories"),
    ("shell_env_passthrough", "shellEnvPassthrough"),
)


@dataclass(slots=True, kw_only=True)
class _Merged:
    root: Path
    origin: dict[str, SettingsLayer] = field(default_factory=dict)
    scalars: dict[str, Any] = field(default_factory=dict)
    lists: dict[str, list[Any]] = field(default_factory=lambda: {n: [] for n, _ in _LISTS})
    hooks: dict[str, list[HookMatcherConfig]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    sandbox: list[SandboxLayer] = field(default_factory=list)
    observe: list[tuple[str, bool, ObserveLayer]] = field(default_factory=list)

    def add(self, layer: SettingsLayer, values: LayerValues) -> None:
        for name, key in _SCALARS:
            if getattr(values, name) is not None:
                self.scalars[name] = getattr(values, name)
                self.origin[key] = layer
        for name, key in _LISTS:
            items: tuple[Any, ...] = getattr(values, name)
            if name == "additional_directories":
                items = tuple(_resolve_dir(text, self.root) for text in items)
            # Concatenate, keeping the first occurrence (and the layer that added it).
            self._extend(self.lists[name], items, key, layer)
        for event, groups in values.hooks:
            self._extend(self.hooks.setdefault(event, []), groups, key_path("hooks", event), layer)
        for name, value in values.env:
            self.env[name] = value
            self.origin[key_path("env", name)] = layer
        for name, server in values.mcp_servers:
            self.mcp_servers[name] = server
            self.origin[key_path("mcpServers", name)] = layer
        if values.sandbox is not None:
            self.sandbox.append(values.sandbox)
            if values.sandbox.enabled is not None:
                self.origin["sandbox.enabled"] = layer
        if values.observe is not None:
            from_project = layer not in (SettingsLayer.USER, SettingsLayer.CLAUDE_USER,
                                         SettingsLayer.FLAGS)
            self.observe.append((layer.value, from_project, values.observe))

    def _extend(
        self, merged: list[Any], items: tuple[Any, ...], key: str, layer: SettingsLayer
    ) -> None:
        for item in items:
            if item not in merged:
                self.origin[f"{key}[{len(merged)}]"] = layer
                merged.append(item)

    def settings(self) -> Settings:
        lists = self.lists
        permissions = PermissionSettings(
            allow=tuple(lists["allow"]), ask=tuple(lists["ask"]), deny=tuple(lists["deny"]),
            default_mode=self.scalars.get("default_mode", PermissionMode.DEFAULT),
            additional_directories=tuple(lists["additional_directories"]),
        )
        hooks = {event: tuple(groups) for event, groups in self.hooks.items() if groups}
        return Settings(
            model=self.scalars.get("model"),
            provider=self.scalars.get("provider"),
            base_url=self.scalars.get("base_url"),
            permissions=permissions,
            hooks=MappingProxyType(hooks),
            env=MappingProxyType(dict(self.env)),
            shell_env_passthrough=tuple(lists["shell_env_passthrough"]),
            mcp_servers=MappingProxyType(dict(self.mcp_servers)),
            compaction=CompactionConfig(
                threshold=self.scalars.get("compaction_threshold"),
                context_window=self.scalars.get("context_window"),
                tool_result_limit_tokens=self.scalars.get("tool_result_limit_tokens"),
            ),
            sandbox=merge_sandbox(self.sandbox, self.root),
            tools=ToolSettings(concurrency=self.scalars.get("tool_concurrency"),
                               search_threshold=self.scalars.get("tool_search_threshold"),
                               schema_gate=self.scalars.get("tool_schema_gate")),
            observe=merge_observe(self.observe),
        )


def _resolve_dir(text: str, root: Path) -> Path:
    # Relative directories are relative to the project; resolving symlinks is the job of
    # the path validator that checks every access, so no I/O here.
    return Path(os.path.normpath(root / Path(text).expanduser()))


def _display(path: Path, root: Path) -> str:
    if path.is_relative_to(root):
        return str(path.relative_to(root))
    try:
        home = Path.home()
    except RuntimeError:
        return str(path)
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def _drop_none(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    return value
