"""Local-scope MCP servers live in the user's data by project and need no trust question."""

from __future__ import annotations

import json
import os
from pathlib import Path

from aimon_core.config import TrustStore, edit_local_servers, load_settings, local_mcp_path


def test_a_local_server_loads_without_trust_and_wins_over_the_projects(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "echo": {"command": "project-echo"}, "other": {"command": "other-server"}}}))
    edit_local_servers(root, lambda servers: servers.update(echo={"command": "my-echo"}))
    loaded = load_settings(root, trust_store=TrustStore())
    servers = dict(loaded.settings.mcp_servers)
    assert servers["echo"].describe() == "my-echo"  # the user's own, in force at once
    assert "other" not in servers  # the project's waits for trust
    assert loaded.pending_trust is not None
    assert not any("my-echo" in what for what in loaded.pending_trust.what)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert dict(load_settings(elsewhere, trust_store=TrustStore()).settings.mcp_servers) == {}
    assert local_mcp_path().is_relative_to(Path(os.environ["AIMON_HOME"]))
