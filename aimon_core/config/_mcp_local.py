"""Local-scope MCP servers: the ones the user adds for one project (`aimon mcp add`), kept in
the user's data by project, as Claude Code keeps them (never in the repository).

The user wrote them, so they need no trust question: they load as the user's own settings,
winning over the project's servers of the same name.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aimon_core.config._mcp import MCPServerConfig, check_mcp_servers
from aimon_core.config._settings import SettingsError

LOCAL_MCP_FILE = "mcp-servers.json"
_DISPLAY = "local MCP servers"


def local_mcp_path() -> Path:
    """Return the file that keeps every project's local-scope servers."""
    from aimon_core.session import user_data_dir

    return user_data_dir() / LOCAL_MCP_FILE


def project_entry(project_root: Path) -> str:
    """Return the key of a project in the file: its resolved path (as Claude Code's)."""
    return str(Path(project_root).resolve())


def read_local_file(path: Path | None = None) -> dict[str, Any]:
    """Return the whole file as data ({} when there is none); SettingsError if malformed."""
    path = path or local_mcp_path()
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # no file, or no data folder to hold one
        return {}
    except OSError as error:
        raise SettingsError(path=path, key=None, display=_DISPLAY,
                            reason=f"cannot read: {error}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise SettingsError(path=path, key=None, display=_DISPLAY, line=error.lineno,
                            column=error.colno, reason=f"invalid JSON: {error.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("projects", {}), dict):
        raise SettingsError(path=path, key=None, display=_DISPLAY,
                            reason="expected an object with 'projects'")
    return data


def local_servers(project_root: Path, path: Path | None = None
                  ) -> tuple[tuple[str, MCPServerConfig], ...]:
    """Return the local-scope servers of a project, checked as settings entries are."""
    path = path or local_mcp_path()
    key = project_entry(project_root)
    project = read_local_file(path).get("projects", {}).get(key, {})
    servers = project.get("mcpServers", {}) if isinstance(project, dict) else {}
    return check_mcp_servers(servers, key=f"projects[{key!r}].mcpServers", path=path,
                             display=_DISPLAY)


def edit_local_servers(project_root: Path, change: Callable[[dict[str, Any]], None],
                       path: Path | None = None) -> Path:
    """Apply `change` to the project's server entries (a dict by name) and write the file."""
    from aimon_core._atomic import write_atomic

    path = path or local_mcp_path()
    data = read_local_file(path)
    projects = data.setdefault("projects", {})
    project = projects.setdefault(project_entry(project_root), {})
    servers = project.setdefault("mcpServers", {})
    change(servers)
    if not servers:
        del projects[project_entry(project_root)]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    return path
