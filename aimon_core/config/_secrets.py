"""The credentials aimon knows of, by value: what is redacted from everything the model sees."""

from __future__ import annotations

from collections.abc import Mapping

from aimon_core.config._mcp import MCPServerConfig, server_credentials
from aimon_core.config._settings import Settings
from aimon_core.shell import SecretPairs, merge_secrets, secret_values


def servers_secrets(servers: Mapping[str, MCPServerConfig], environ: Mapping[str, str]
                    ) -> SecretPairs:
    """Return the credentials of `environ` and those the MCP entries hand their servers."""
    return merge_secrets(secret_values(environ),
                         *(server_credentials(config, environ) for config in servers.values()))


def known_secrets(settings: Settings, environ: Mapping[str, str]) -> SecretPairs:
    """Return (name, value) of every credential aimon knows of, longest value first.

    Those of its environment, those set through the settings' `env` (any layer), and those an
    MCP server entry hands its server (`env`, `headers`), each by the credential rule
    (`aimon_core.shell.is_secret`).
    """
    return merge_secrets(servers_secrets(settings.mcp_servers, environ),
                         secret_values(settings.env))
