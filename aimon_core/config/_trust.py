"""Trust for content: which project settings are risky, one digest per item, and the store.

Project settings (``settings.json`` and ``settings.local.json`` under ``.aimon/`` and Claude
Code's ``.claude/``, and ``.mcp.json``) that add hooks or MCP servers, widen permissions, or set
``env`` or ``base_url`` take effect only once the user trusts them. Trust is given to each item
as it reads (one hook command with its event and matcher, one MCP server with its command, one
allow rule, one variable...), by a digest of its content: a new or changed item is held back
and asked about again while the others stay in force, and removing an item takes trust from
nothing else. The store keeps, per folder, the digests of what the user trusted last time; a
record from before (one hash of the whole folder) trusts nothing, so aimon asks once again.
Rules that only narrow (deny, ask) always apply.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import logging
import os
from collections.abc import Callable, Collection, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aimon_core._atomic import write_atomic
from aimon_core.config._mcp import MCPServerConfig, StdioServerConfig
from aimon_core.config._scripts import named_scripts
from aimon_core.config._settings import HookMatcherConfig, hooks_to_json
from aimon_core.config._validate import LayerValues
from aimon_core.permission import PermissionMode

log = logging.getLogger(__name__)

TRUST_FILE_NAME = "trusted-folders.json"
_FORMAT_VERSION = 2
_WIDENING_MODES = frozenset({PermissionMode.ACCEPT_EDITS, PermissionMode.BYPASS})
_COMMAND_PREVIEW = 60


def risky_parts(values: LayerValues) -> dict[str, Any]:
    """Return the parts of a layer that need trust, as JSON data (empty if there are none)."""
    parts: dict[str, Any] = {}
    if any(groups for _, groups in values.hooks):
        parts["hooks"] = hooks_to_json({e: g for e, g in values.hooks if g})
    if values.allow:
        parts["allow"] = list(values.allow)
    if values.default_mode in _WIDENING_MODES:
        parts["defaultMode"] = values.default_mode.value
    if values.additional_directories:
        parts["additionalDirectories"] = list(values.additional_directories)
    if values.env:
        parts["env"] = dict(values.env)
    if values.shell_env_passthrough:
        parts["shellEnvPassthrough"] = list(values.shell_env_passthrough)
    if values.base_url is not None:
        parts["base_url"] = values.base_url
    if values.mcp_servers:
        parts["mcpServers"] = {name: config.to_json() for name, config in values.mcp_servers}
    if values.sandbox is not None and (sandbox := values.sandbox.widening()):
        parts["sandbox"] = sandbox
    return parts


def item_digest(*parts: Any) -> str:
    """Return the digest one trusted item is known by (sha256 of its canonical JSON)."""
    canonical = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def request_hash(items: Collection[str]) -> str:
    """Return the identity of a trust question: a digest of the items it asks about."""
    return hashlib.sha256("\n".join(sorted(items)).encode("ascii")).hexdigest()


# The questions this process asked, by folder and question hash: what trusting each trusts.
# `TrustStore.trust(folder, request.config_hash)` (how callers trusted a folder before trust
# was per item) trusts exactly what that question offered, never a folder as it reads later.
_ASKED: dict[tuple[str, str], tuple[str, ...]] = {}
_ASKED_KEPT = 64


def remember_question(folder: Path | str, config_hash: str, items: Collection[str]) -> None:
    """Remember what the question `config_hash` about `folder` offers to trust."""
    _ASKED[(folder_key(folder), config_hash)] = tuple(items)
    while len(_ASKED) > _ASKED_KEPT:
        del _ASKED[next(iter(_ASKED))]


def split_risky(values: LayerValues, keep: Callable[[str], bool], folder: Path | None = None
                ) -> tuple[LayerValues, tuple[str, ...]]:
    """Return the layer with only the risky items `keep` accepts, and every item's digest.

    What only narrows or informs (deny and ask rules, the model, a narrowing mode) stays. With
    `folder` (the project), a hook or MCP server is known by the repository scripts its
    command names too (`named_scripts`): a changed script is a changed item.
    """
    seen: list[str] = []
    variables = ({"AIMON_PROJECT_DIR": str(folder), "CLAUDE_PROJECT_DIR": str(folder)}
                 if folder is not None else {})

    def kept(*parts: Any, runs: str | tuple[str, ...] = ()) -> bool:
        scripts = named_scripts(runs, folder, variables) if folder is not None and runs else {}
        digest = item_digest(*parts, scripts) if scripts else item_digest(*parts)
        seen.append(digest)
        return keep(digest)

    hooks = []
    for event, groups in values.hooks:
        kept_groups = tuple(g for g in (_kept_group(event, group, kept) for group in groups)
                            if g is not None)
        if kept_groups:
            hooks.append((event, kept_groups))
    mode = values.default_mode
    if mode in _WIDENING_MODES and not kept("defaultMode", mode.value):
        mode = None
    base_url = values.base_url
    if base_url is not None and not kept("base_url", base_url):
        base_url = None
    filtered = dataclasses.replace(
        values, hooks=tuple(hooks), default_mode=mode, base_url=base_url,
        allow=tuple(r for r in values.allow if kept("allow", r)),
        additional_directories=tuple(d for d in values.additional_directories
                                     if kept("additionalDirectories", d)),
        env=tuple((n, v) for n, v in values.env if kept("env", n, v)),
        shell_env_passthrough=tuple(n for n in values.shell_env_passthrough
                                    if kept("shellEnvPassthrough", n)),
        mcp_servers=tuple((n, c) for n, c in values.mcp_servers
                          if kept("mcpServers", n, c.to_json(), runs=_server_words(c))),
        sandbox=values.sandbox.kept(lambda name, value: kept("sandbox", name, value))
        if values.sandbox is not None else None,
    )
    return filtered, tuple(seen)


def _kept_group(event: str, group: HookMatcherConfig, kept: Callable[..., bool]
                ) -> HookMatcherConfig | None:
    """Return the hook group with the commands `kept` accepts (each with event and matcher)."""
    commands = tuple(
        command for command in group.hooks
        if kept("hooks", hooks_to_json({event: (dataclasses.replace(group, hooks=(command,)),)}),
                runs=command.command))
    return dataclasses.replace(group, hooks=commands) if commands else None


def _server_words(config: MCPServerConfig) -> tuple[str, ...]:
    """Return the words a stdio MCP server is started with (none for a remote one)."""
    match config:
        case StdioServerConfig(command=command, args=args):
            return (command, *args)
        case _:
            return ()


def without_risky(values: LayerValues) -> LayerValues:
    """Return the layer with its risky parts removed; what is left only narrows or informs."""
    return split_risky(values, lambda _: False)[0]


def describe_risks(values: LayerValues) -> list[str]:
    """Say in words what the risky parts of a layer would do, one line each."""
    lines: list[str] = []
    hooks = [(event, group) for event, groups in values.hooks for group in groups]
    count = sum(len(group.hooks) for _, group in hooks)
    if count:
        per_event: dict[str, list[str]] = {}
        for event, group in hooks:
            per_event.setdefault(event, []).extend(_preview(c.command) for c in group.hooks)
        shown = "; ".join(f"{event}: {', '.join(cmds)}" for event, cmds in per_event.items())
        lines.append(f"adds {count} hook{'s' if count != 1 else ''} ({shown})")
    lines.extend(f"allows {rule}" for rule in values.allow)
    if values.default_mode in _WIDENING_MODES:
        lines.append(f"sets the permission mode to {values.default_mode.value}")
    lines.extend(f"gives access to the directory {d}" for d in values.additional_directories)
    if values.env:
        names = ", ".join(name for name, _ in values.env)
        lines.append(f"sets environment variables for tool commands: {names}")
    if values.shell_env_passthrough:
        names = ", ".join(values.shell_env_passthrough)
        lines.append(f"lets tool commands see the credentials {names}")
    if values.base_url is not None:
        lines.append(f"sends model requests to {values.base_url}")
    for name, config in values.mcp_servers:
        verb = "starts" if config.transport == "stdio" else "connects to"
        lines.append(f"{verb} the MCP server {name}: {_preview(config.describe())}")
    if values.sandbox is not None:
        lines.extend(values.sandbox.describe_widening())
    return lines


def _preview(command: str) -> str:
    one_line = " ".join(command.split())
    if len(one_line) <= _COMMAND_PREVIEW:
        return one_line
    return one_line[: _COMMAND_PREVIEW - 1] + "…"


def user_dir() -> Path:
    """Return the user config dir (honours `$AIMON_HOME`)."""
    # Imported here: the session package sits above config, importing it at the top would cycle.
    from aimon_core.session import user_config_dir

    return user_config_dir()


def folder_key(folder: Path | str) -> str:
    """Return the key a folder is trusted under: its resolved absolute path."""
    return str(Path(folder).expanduser().resolve())


class TrustStore:
    """What the user trusted in each folder: the digests of the items, as they read then.

    The file (``<user config dir>/trusted-folders.json``) is rewritten atomically under an
    exclusive lock. A corrupt file trusts nothing: it is logged, never fatal.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else user_dir() / TRUST_FILE_NAME

    def trusted_items(self, folder: Path | str) -> frozenset[str]:
        """Return the digests of the items the user trusted in `folder` (none: empty)."""
        record = self._read().get(folder_key(folder))
        items = record.get("items") if record is not None else None
        if not isinstance(items, list):
            return frozenset()
        return frozenset(item for item in items if isinstance(item, str))

    def trust(self, folder: Path | str, items: Collection[str] | str) -> None:
        """Record that the user trusts exactly `items` (digests) in `folder` from now on.

        A string is a question's `config_hash`: what that question (asked in this process)
        offered is trusted; an unknown hash is an error, never a whole folder.
        """
        if isinstance(items, str):
            asked = _ASKED.get((folder_key(folder), items))
            if asked is None:
                raise ValueError(f"no trust question {items[:12]}… was asked about {folder} "
                                 "here: pass TrustRequest.items")
            items = asked
        with self._locked():
            folders = self._read()
            folders[folder_key(folder)] = {
                "items": sorted(set(items)),
                "trusted_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            self._write(folders)

    def revoke(self, folder: Path | str) -> None:
        """Forget the trust of `folder` (nothing happens if it was not trusted)."""
        with self._locked():
            folders = self._read()
            if folders.pop(folder_key(folder), None) is not None:
                self._write(folders)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            # Two aimon processes trusting folders at once must not lose each other's record.
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as error:
            log.warning("cannot read %s (%s); no folder is trusted", self.path, error)
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            log.warning("%s is not valid JSON (%s); no folder is trusted", self.path, error)
            return {}
        folders = data.get("folders") if isinstance(data, dict) else None
        if not isinstance(folders, dict):
            log.warning("%s has no 'folders' object; no folder is trusted", self.path)
            return {}
        return {k: v for k, v in folders.items() if isinstance(v, dict)}

    def _write(self, folders: dict[str, dict[str, Any]]) -> None:
        document = {"version": _FORMAT_VERSION, "folders": folders}
        data = (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")
        _atomic_write(self.path, data)


def _atomic_write(target: Path, data: bytes) -> None:
    write_atomic(target, data, mode=0o600)
