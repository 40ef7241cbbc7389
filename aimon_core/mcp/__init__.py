"""MCP: the Model Context Protocol servers a runtime talks to, and the tools they add.

Importing this package does not import the `mcp` SDK (0.9-2 s here); connections import it
off the event loop when the first server starts.
"""

from aimon_core.config import expand
from aimon_core.mcp._auth import auth_folder, login_timeout, logout
from aimon_core.mcp._connection import (
    MCPConnectionError,
    RemotePrompt,
    RemoteTool,
    ServerOffer,
    login,
    server_env,
)
from aimon_core.mcp._convert import call_result, prompt_command, tool_name, truncate
from aimon_core.mcp._elicit import form_fields, with_defaults
from aimon_core.mcp._extras import (
    LIST_RESOURCES,
    READ_RESOURCE,
    attach_resources,
    bind_extras,
    resource_tools,
    status_text,
)
from aimon_core.mcp._servers import MCPOptions, MCPServers, ServerPhase, ServerStatus

__all__ = [
    "LIST_RESOURCES",
    "READ_RESOURCE",
    "MCPConnectionError",
    "MCPOptions",
    "MCPServers",
    "RemotePrompt",
    "RemoteTool",
    "ServerOffer",
    "ServerPhase",
    "ServerStatus",
    "attach_resources",
    "auth_folder",
    "bind_extras",
    "call_result",
    "expand",
    "form_fields",
    "login",
    "login_timeout",
    "logout",
    "prompt_command",
    "resource_tools",
    "server_env",
    "status_text",
    "tool_name",
    "truncate",
    "with_defaults",
]
