"""/sandbox: available or what is missing (with the install command), the mode, the boundary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aimon_core.command._sandbox import sandbox_text
from aimon_core.config import TrustStore, load_settings
from aimon_core.permission import PermissionMode, PermissionPolicy, PermissionRules
from aimon_core.permission._sandboxed import SandboxedBash, sandbox_paths
from aimon_core.session import user_config_dir
from aimon_core.shell import SandboxConfig, SandboxProbe
from aimon_core.testing import LoopbackModelServer, Reply

READY = SandboxProbe(bwrap="/usr/bin/bwrap", nsenter="/usr/bin/nsenter")
MISSING = SandboxProbe(bwrap=None, nsenter=None,
                       missing=("bubblewrap (bwrap)", "nsenter (util-linux)"),
                       install="sudo apt-get install bubblewrap util-linux")


def settings_file(data: dict[str, object]) -> None:
    path = user_config_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def shown(root: Path, probe: SandboxProbe, *, active: bool) -> str:
    loaded = load_settings(root, trust_store=TrustStore())
    policy = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, root)
    if active:
        paths = sandbox_paths(loaded.settings.sandbox, root, ())
        policy.sandbox = SandboxedBash(config=SandboxConfig(paths=paths),
                                       auto_allow=loaded.settings.sandbox.auto_allow)
    return sandbox_text(loaded, policy, probe)


def test_off_says_how_to_turn_it_on(tmp_path: Path) -> None:
    text = shown(tmp_path, READY, active=False)
    assert text.startswith("Sandbox: off.")
    assert '"sandbox": {"enabled": true}' in text and "--sandbox" in text
    assert "Available here: yes (bubblewrap at /usr/bin/bwrap)" in text


def test_missing_names_what_and_the_install_command(tmp_path: Path) -> None:
    settings_file({"sandbox": {"enabled": True}})
    text = shown(tmp_path, MISSING, active=False)
    assert text.startswith("Sandbox: on, but it cannot run here: missing bubblewrap (bwrap), "
                           "nsenter (util-linux); install with: sudo apt-get install "
                           "bubblewrap util-linux.")
    assert "Available here: no: missing bubblewrap (bwrap)" in text


@pytest.mark.parametrize(("auto", "mode"), [(True, "on, auto-allow"),
                                            (False, "on, regular permissions")])
def test_the_mode(auto: bool, mode: str, tmp_path: Path) -> None:
    settings_file({"sandbox": {"enabled": True, "autoAllowBashIfSandboxed": auto,
                               "allowUnsandboxedCommands": False,
                               "excludedCommands": ["docker:*"]}})
    text = shown(tmp_path, READY, active=True)
    assert text.startswith(f"Sandbox: {mode}")
    assert "sandbox.enabled from " in text
    assert "Unsandboxed fallback: off (allowUnsandboxedCommands: false)" in text
    assert "Excluded commands (normal rules, outside the sandbox): docker:*" in text


def test_the_boundary_is_resolved_to_paths(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    (home / ".ssh").mkdir(parents=True)
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("")
    monkeypatch.setenv("HOME", str(home))
    settings_file({"sandbox": {"enabled": True, "network": {
        "allowedDomains": ["github.com"], "deniedDomains": ["evil.test"],
        "allowUnixSockets": ["/run/x.sock"]}}})
    text = shown(root, READY, active=True)
    assert f"writable:        {root}, {root}/.git, and a temporary folder" in text
    assert f"read-only there: {root}/.git/config, {root}/.git/hooks" in text
    assert f"kept from being made: {root}/.aimon, {root}/.claude, {root}/.mcp.json" in text
    [unreadable] = [line for line in text.splitlines() if "unreadable:" in line]
    assert "~/.ssh" in unreadable
    assert "allowed: github.com; denied: evil.test" in text
    assert "network.allowUnixSockets names paths, which Linux cannot filter" in text


def test_in_print_mode_with_the_flag(tmp_path: Path) -> None:
    """`aimon -p /sandbox --sandbox`: the command runs before any model call."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    with LoopbackModelServer([Reply(text="unused")], provider="openai") as server:
        env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url,
                   AIMON_NO_LOCAL_PROBE="1")
        done = subprocess.run(
            [str(Path(sys.executable).with_name("aimon")), "--provider", "openai", "--model",
             "gpt-5.4", "-p", "/sandbox", "--sandbox"], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "(sandbox.enabled from the command line (--sandbox))" in done.stdout
    assert "Boundary (resolved now):" in done.stdout
