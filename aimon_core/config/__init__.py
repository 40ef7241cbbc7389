"""Layered settings (user < project < local < flags), folder trust, and hot reload."""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr
from aimon_core.config._layers import (
    CLAUDE_DIR,
    LOCAL_SETTINGS_FILE,
    PROJECT_DIR,
    SETTINGS_FILE,
    claude_user_dir,
    load_settings,
    own_read_filter,
    settings_paths,
)
from aimon_core.config._mcp import (
    MCP_JSON_FILE,
    Elicitation,
    HTTPServerConfig,
    MCPServerConfig,
    OAuthConfig,
    StdioServerConfig,
    check_server,
    expand,
    read_mcp_json,
    server_credentials,
)
from aimon_core.config._mcp_local import (
    LOCAL_MCP_FILE,
    edit_local_servers,
    local_mcp_path,
    local_servers,
)
from aimon_core.config._settings import (
    CompactionConfig,
    HookCommandConfig,
    HookMatcherConfig,
    LoadedSettings,
    PermissionMode,
    PermissionSettings,
    Provider,
    Settings,
    SettingsError,
    SettingsLayer,
    SettingsSource,
    ToolSettings,
    TrustRequest,
)
from aimon_core.config._skill_trust import skill_hooks_trusted
from aimon_core.config._trust import TRUST_FILE_NAME, TrustStore, item_digest

if TYPE_CHECKING:
    from aimon_core.config._sandbox import SandboxSettings
    from aimon_core.config._secrets import known_secrets, servers_secrets
    from aimon_core.config._watch import SettingsCallback, watch_settings

# The watcher (asyncio, its polling loop) loads on first use: only the REPL watches settings,
# print mode never does. The credentials load with the runtime (they need aimon_core.shell).
__getattr__ = lazy_getattr(__name__, {"SettingsCallback": "_watch", "watch_settings": "_watch",
                                      "known_secrets": "_secrets", "servers_secrets": "_secrets",
                                      "SandboxSettings": "_sandbox"})

__all__ = [
    "CLAUDE_DIR",
    "LOCAL_MCP_FILE",
    "LOCAL_SETTINGS_FILE",
    "MCP_JSON_FILE",
    "PROJECT_DIR",
    "SETTINGS_FILE",
    "TRUST_FILE_NAME",
    "CompactionConfig",
    "Elicitation",
    "HTTPServerConfig",
    "HookCommandConfig",
    "HookMatcherConfig",
    "LoadedSettings",
    "MCPServerConfig",
    "OAuthConfig",
    "PermissionMode",
    "PermissionSettings",
    "Provider",
    "SandboxSettings",
    "Settings",
    "SettingsCallback",
    "SettingsError",
    "SettingsLayer",
    "SettingsSource",
    "StdioServerConfig",
    "ToolSettings",
    "TrustRequest",
    "TrustStore",
    "check_server",
    "claude_user_dir",
    "edit_local_servers",
    "expand",
    "item_digest",
    "known_secrets",
    "load_settings",
    "local_mcp_path",
    "local_servers",
    "own_read_filter",
    "read_mcp_json",
    "server_credentials",
    "servers_secrets",
    "settings_paths",
    "skill_hooks_trusted",
    "watch_settings",
]
