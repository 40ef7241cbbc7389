"""`mcpServers` in settings and `.mcp.json`: validation, layering, and the trust gate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aimon_core.config import (
    HTTPServerConfig,
    SettingsError,
    StdioServerConfig,
    TrustStore,
    load_settings,
)
from aimon_core.session import user_config_dir


def write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


def test_user_servers_load_without_trust(project: Path) -> None:
    write(user_config_dir() / "settings.json", {"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
                 "env": {"TZ": "UTC"}},
        "remote": {"type": "http", "url": "https://example.com/mcp",
                   "headers": {"Authorization": "Bearer ${TOKEN}"}}}})
    loaded = load_settings(project, trust_store=TrustStore())
    servers = loaded.settings.mcp_servers
    assert servers["time"] == StdioServerConfig(
        command="mcp-server-time", args=("--local-timezone", "UTC"), env=(("TZ", "UTC"),))
    assert servers["remote"] == HTTPServerConfig(
        url="https://example.com/mcp", headers=(("Authorization", "Bearer ${TOKEN}"),))
    assert loaded.pending_trust is None


def test_project_servers_wait_for_trust_and_the_question_names_each_command(
        project: Path) -> None:
    write(project / ".mcp.json", {"mcpServers": {"git": {"command": "mcp-server-git",
                                                         "args": ["-r", "."]}}})
    write(project / ".aimon" / "settings.json", {"mcpServers": {
        "docs": {"type": "sse", "url": "http://localhost:9/sse"}}})
    store = TrustStore()
    loaded = load_settings(project, trust_store=store)
    assert dict(loaded.settings.mcp_servers) == {}
    assert loaded.pending_trust is not None
    assert "starts the MCP server git: mcp-server-git -r ." in loaded.pending_trust.what
    assert "connects to the MCP server docs: http://localhost:9/sse" in loaded.pending_trust.what
    store.trust(project, loaded.pending_trust.items)
    trusted = load_settings(project, trust_store=store)
    assert set(trusted.settings.mcp_servers) == {"git", "docs"}
    assert trusted.settings.mcp_servers["docs"].transport == "sse"
    # A changed command asks again.
    write(project / ".mcp.json", {"mcpServers": {"git": {"command": "evil"}}})
    assert load_settings(project, trust_store=store).pending_trust is not None


def test_later_layers_replace_a_server_by_name(project: Path) -> None:
    write(user_config_dir() / "settings.json",
          {"mcpServers": {"a": {"command": "one"}, "b": {"command": "two"}}})
    write(project / ".aimon" / "settings.local.json", {"mcpServers": {"a": {"command": "three"}}})
    loaded = load_settings(project, trust_store=TrustStore(), trust_all=True)
    servers = loaded.settings.mcp_servers
    assert [(n, c.describe()) for n, c in servers.items()] == [("a", "three"), ("b", "two")]


@pytest.mark.parametrize(("servers", "key"), [
    ({"bad name": {"command": "x"}}, "mcpServers['bad name']"),
    ({"x": {"args": ["a"]}}, "mcpServers.x"),
    ({"x": {"command": "x", "args": "a"}}, "mcpServers.x.args"),
    ({"x": {"type": "http", "url": "ftp://x"}}, "mcpServers.x.url"),
    ({"x": {"command": "x", "colour": 1}}, "mcpServers.x.colour"),
])
def test_bad_entries_name_the_key(project: Path, servers: dict[str, Any], key: str) -> None:
    write(user_config_dir() / "settings.json", {"mcpServers": servers})
    with pytest.raises(SettingsError) as caught:
        load_settings(project, trust_store=TrustStore())
    assert caught.value.key == key


def test_claude_code_keys_are_accepted(project: Path) -> None:
    write(project / ".mcp.json", {"mcpServers": {"s": {
        "type": "stdio", "command": "npx", "args": ["-y", "pkg"], "env": {}, "disabled": False}}})
    loaded = load_settings(project, trust_store=TrustStore(), trust_all=True)
    assert loaded.settings.mcp_servers["s"].describe() == "npx -y pkg"
