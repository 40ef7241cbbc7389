"""`aimon mcp add|list|get|remove|login|logout`: entries of the scope's file, and sign-ins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from aimon_core.config import local_mcp_path
from aimon_core.session import user_config_dir

AIMON = str(Path(sys.executable).with_name("aimon"))


def aimon(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AIMON, "mcp", *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=60, check=False)


def test_add_list_get_remove_in_every_scope(tmp_path: Path) -> None:
    local = tmp_path / ".aimon" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(json.dumps({"model": "keep-me", "permissions": {"allow": ["Read"]}}))
    assert aimon(tmp_path, "add", "time", "--", "mcp-server-time", "--local-timezone",
                 "UTC").returncode == 0
    added = aimon(tmp_path, "add", "-s", "project", "--transport", "http", "-H",
                  "Authorization: Bearer ${TOKEN}", "docs", "https://example.com/mcp")
    assert added.returncode == 0, added.stderr
    assert aimon(tmp_path, "add", "-s", "user", "-e", "A=b", "git", "--", "mcp-server-git",
                 "-r", ".").returncode == 0
    data = json.loads(local.read_text())  # a local server goes to the user's data now
    assert data == {"model": "keep-me", "permissions": {"allow": ["Read"]}}
    kept = json.loads(local_mcp_path().read_text())["projects"][str(tmp_path.resolve())]
    assert kept["mcpServers"]["time"] == {"command": "mcp-server-time",
                                          "args": ["--local-timezone", "UTC"]}
    assert json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]["docs"] == {
        "type": "http", "url": "https://example.com/mcp",
        "headers": {"Authorization": "Bearer ${TOKEN}"}}
    user = json.loads((user_config_dir() / "settings.json").read_text())
    assert user["mcpServers"]["git"]["env"] == {"A": "b"}
    listed = aimon(tmp_path, "list").stdout.splitlines()
    assert listed == ["git   (user, stdio)    mcp-server-git -r .",
                      "docs  (project, http)  https://example.com/mcp",
                      "time  (local, stdio)   mcp-server-time --local-timezone UTC"]
    assert "scope: project" in aimon(tmp_path, "get", "docs").stdout
    again = aimon(tmp_path, "add", "time", "--", "other-server")
    assert again.returncode == 1 and "is in the local scope already" in again.stderr
    assert "other-server" not in local_mcp_path().read_text()
    assert aimon(tmp_path, "remove", "time").returncode == 0
    assert json.loads(local_mcp_path().read_text())["projects"] == {}
    assert aimon(tmp_path, "remove", "nope").returncode == 1


def test_a_bad_entry_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    done = aimon(tmp_path, "add", "--transport", "http", "bad", "ftp://x")
    assert done.returncode == 2 and "http:// or https://" in done.stderr
    assert not (tmp_path / ".aimon").exists()


def test_a_registered_client_is_written_and_login_logout_name_the_server(
        tmp_path: Path) -> None:
    added = aimon(tmp_path, "add", "--transport", "http", "--client-id", "aimon-at-acme",
                  "--client-secret", "${ACME_SECRET}", "--callback-port", "8765", "acme",
                  "https://mcp.acme.example/mcp")
    assert added.returncode == 0, added.stderr
    entry = json.loads(local_mcp_path().read_text())["projects"][str(tmp_path.resolve())][
        "mcpServers"]
    assert entry["acme"]["oauth"] == {"clientId": "aimon-at-acme",
                                      "clientSecret": "${ACME_SECRET}", "callbackPort": 8765}
    missing = aimon(tmp_path, "login", "nope")
    assert missing.returncode == 1 and "No MCP server named 'nope'" in missing.stderr
    assert aimon(tmp_path, "add", "time", "--", "mcp-server-time").returncode == 0
    stdio = aimon(tmp_path, "login", "time")
    assert stdio.returncode == 0 and "needs no sign-in" in stdio.stdout
    assert "kept no sign-in for MCP server acme" in aimon(tmp_path, "logout", "acme").stdout


def test_a_lone_url_is_a_remote_server(tmp_path: Path) -> None:
    assert aimon(tmp_path, "add", "-s", "project", "web", "https://example.com/mcp"
                 ).returncode == 0
    assert aimon(tmp_path, "add", "-s", "project", "tool", "--", "https-helper", "x"
                 ).returncode == 0
    servers = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert servers == {"web": {"type": "http", "url": "https://example.com/mcp"},
                       "tool": {"command": "https-helper", "args": ["x"]}}
