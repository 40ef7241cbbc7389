"""The `sandbox` settings block: Claude Code's keys, checked, merged by layer, gated by trust."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from aimon_core.config import SettingsError, TrustStore, load_settings
from aimon_core.config._sandbox import SandboxSettings, resolve_path

from .conftest import Writer

FULL: dict[str, Any] = {
    "enabled": True,
    "autoAllowBashIfSandboxed": False,
    "excludedCommands": ["docker:*", "git push"],
    "allowUnsandboxedCommands": False,
    "failIfUnavailable": True,
    "network": {"allowedDomains": ["github.com", "*.npmjs.org:443", "[::1]:8080"],
                "deniedDomains": ["evil.example"], "allowUnixSockets": ["/run/x.sock"],
                "allowAllUnixSockets": True, "allowLocalBinding": True},
    "filesystem": {"allowWrite": ["~/.kube", "//tmp/build", "/var/cache/x", "out"],
                   "denyWrite": ["secrets/**"], "denyRead": ["~/.gnupg/**"],
                   "allowRead": ["~/.gnupg/public"]},
}


def test_every_key_claude_code_documents_is_read(project: Path, trust_store: TrustStore,
                                                 write: Writer,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    write("user", {"sandbox": FULL})
    sandbox = load_settings(project, trust_store=trust_store).settings.sandbox
    assert sandbox == SandboxSettings(
        enabled=True, auto_allow=False, allow_unsandboxed=False, fail_if_unavailable=True,
        allow_all_unix_sockets=True, allow_local_binding=True,
        excluded_commands=("docker:*", "git push"),
        allowed_domains=("github.com", "*.npmjs.org:443", "[::1]:8080"),
        denied_domains=("evil.example",), allow_unix_sockets=("/run/x.sock",),
        allow_write=(Path("/home/u/.kube"), Path("/tmp/build"), Path("/var/cache/x"),
                     project / "out"),
        deny_write=(project / "secrets",), deny_read=(Path("/home/u/.gnupg"),),
        allow_read=(Path("/home/u/.gnupg/public"),))


def test_the_defaults_are_claude_codes(project: Path, trust_store: TrustStore) -> None:
    sandbox = load_settings(project, trust_store=trust_store).settings.sandbox
    assert (sandbox.enabled, sandbox.auto_allow, sandbox.allow_unsandboxed,
            sandbox.fail_if_unavailable) == (False, True, True, False)


def test_layers_merge_values_win_lists_add_up(project: Path, trust_store: TrustStore,
                                             write: Writer) -> None:
    write("user", {"sandbox": {"enabled": True, "network": {"allowedDomains": ["a.test"]},
                               "excludedCommands": ["docker"]}})
    write("project", {"sandbox": {"autoAllowBashIfSandboxed": False,
                                  "network": {"deniedDomains": ["b.test"]},
                                  "excludedCommands": ["docker", "make"]}})
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    sandbox = loaded.settings.sandbox
    assert sandbox.enabled and not sandbox.auto_allow
    assert sandbox.allowed_domains == ("a.test",)
    assert sandbox.denied_domains == ("b.test",)
    assert sandbox.excluded_commands == ("docker", "make")


def test_the_sandbox_flag_is_the_flags_layer(project: Path, trust_store: TrustStore,
                                            write: Writer) -> None:
    write("user", {"sandbox": {"enabled": False}})
    loaded = load_settings(project, trust_store=trust_store,
                           flags={"sandbox": {"enabled": True}})
    assert loaded.settings.sandbox.enabled
    assert loaded.origin["sandbox.enabled"].value == "flags"


@pytest.mark.parametrize(("path", "expected"), [
    ("~/.kube", "{HOME}/.kube"),
    ("//etc/x", "/etc/x"),
    ("/etc/x", "/etc/x"),
    ("build", "{ROOT}/build"),
    ("./build/", "{ROOT}/build"),
    ("build/**", "{ROOT}/build"),
    ("~/.ssh/**", "{HOME}/.ssh"),
    ("../sibling", "{PARENT}/sibling"),
])
def test_paths_resolve_like_claude_codes(path: str, expected: str,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/u")
    root = Path("/work/proj")
    want = expected.replace("{HOME}", "/home/u").replace("{ROOT}", str(root)).replace(
        "{PARENT}", str(root.parent))
    assert resolve_path(path, root) == Path(want)


BAD: list[tuple[Any, str]] = [
    ({"enabled": "yes"}, "sandbox.enabled: expected true or false"),
    ({"enabeld": True}, "sandbox.enabeld: unknown key; did you mean 'enabled'?"),
    ({"filesystem": {"denyread": ["x"]}}, "did you mean 'denyRead'?"),
    ({"network": {"deniedDomain": ["x"]}}, "did you mean 'deniedDomains'?"),
    ({"filesystem": {"denyRead": ["~/**.kdbx"]}}, "a pattern other than a final /**"),
    ({"filesystem": {"denyWrite": [""]}}, "must not be empty"),
    ({"network": {"allowedDomains": ["http://x.test/"]}}, "is not a domain"),
    ({"network": {"deniedDomains": ["a b"]}}, "is not a domain"),
    ({"excludedCommands": ["docker("]}, "is not a command pattern"),
    ({"network": []}, "sandbox.network: expected an object"),
    ([], "sandbox: expected an object"),
]


@pytest.mark.parametrize(("block", "reason"), BAD, ids=[r for _, r in BAD])
def test_a_broken_block_stops_start_up(block: Any, reason: str, project: Path,
                                       trust_store: TrustStore, write: Writer) -> None:
    write("user", {"sandbox": block})
    with pytest.raises(SettingsError, match=re.escape(reason)):
        load_settings(project, trust_store=trust_store)


def test_keys_aimon_does_not_use_are_named(project: Path, trust_store: TrustStore,
                                          write: Writer) -> None:
    write("user", {"sandbox": {"enabled": True, "ignoreViolations": {},
                               "network": {"httpProxyPort": 8080}}})
    loaded = load_settings(project, trust_store=trust_store)
    assert any("sandbox.ignoreViolations" in w and "sandbox.network.httpProxyPort" in w
               for w in loaded.warnings), loaded.warnings


WIDENING: list[tuple[dict[str, Any], str]] = [
    ({"enabled": True}, "turns the sandbox on"),
    ({"enabled": False}, "turns the sandbox off"),
    ({"autoAllowBashIfSandboxed": True}, "runs sandboxed commands without asking"),
    ({"allowUnsandboxedCommands": True}, "lets commands ask to run outside the sandbox"),
    ({"failIfUnavailable": False}, "runs commands unsandboxed where the sandbox is missing"),
    ({"network": {"allowedDomains": ["x.test"]}}, "allowed domains: x.test"),
    ({"network": {"allowUnixSockets": ["/run/docker.sock"]}}, "allow unix sockets"),
    ({"network": {"allowAllUnixSockets": True}}, "open Unix sockets"),
    ({"network": {"allowLocalBinding": True}}, "bind local ports"),
    ({"filesystem": {"allowWrite": ["~"]}}, "allow write: ~"),
    ({"filesystem": {"allowRead": ["~/.ssh"]}}, "allow read: ~/.ssh"),
]


@pytest.mark.parametrize(("block", "said"), WIDENING, ids=[s for _, s in WIDENING])
def test_a_project_widening_the_sandbox_waits_for_trust(
        block: dict[str, Any], said: str, project: Path, trust_store: TrustStore,
        write: Writer) -> None:
    enabled = not block.get("enabled", False)  # the user's says the opposite of the project's
    write("user", {"sandbox": {"enabled": enabled, "autoAllowBashIfSandboxed": False,
                               "allowUnsandboxedCommands": False, "failIfUnavailable": True}})
    write("project", {"sandbox": block})
    loaded = load_settings(project, trust_store=trust_store)
    assert loaded.pending_trust is not None
    assert any(said in line for line in loaded.pending_trust.what), loaded.pending_trust.what
    held = loaded.settings.sandbox
    only_user = SandboxSettings(enabled=enabled, auto_allow=False, allow_unsandboxed=False,
                                fail_if_unavailable=True)
    assert held == only_user
    trusted = load_settings(project, trust_store=trust_store, trust_all=True).settings.sandbox
    assert trusted != only_user


NARROWING: list[dict[str, Any]] = [
    {"autoAllowBashIfSandboxed": False},
    {"allowUnsandboxedCommands": False},
    {"failIfUnavailable": True},
    {"excludedCommands": ["docker"]},
    {"network": {"deniedDomains": ["x.test"]}},
    {"filesystem": {"denyRead": ["~/.config"], "denyWrite": ["docs"]}},
]


@pytest.mark.parametrize("block", NARROWING, ids=[str(b) for b in NARROWING])
def test_a_project_narrowing_the_sandbox_applies_at_once(
        block: dict[str, Any], project: Path, trust_store: TrustStore, write: Writer) -> None:
    write("user", {"sandbox": {"enabled": True}})
    write("project", {"sandbox": block})
    loaded = load_settings(project, trust_store=trust_store)
    assert loaded.pending_trust is None
    assert loaded.settings.sandbox == load_settings(
        project, trust_store=trust_store, trust_all=True).settings.sandbox


def test_trust_is_per_item_a_new_domain_asks_the_rest_stays(
        project: Path, trust_store: TrustStore, write: Writer) -> None:
    write("user", {"sandbox": {"enabled": True}})
    write("project", {"sandbox": {"network": {"allowedDomains": ["a.test"]}}})
    request = load_settings(project, trust_store=trust_store).pending_trust
    assert request is not None
    trust_store.trust(request.folder, request.items)
    write("project", {"sandbox": {"network": {"allowedDomains": ["a.test", "b.test"]}}})
    loaded = load_settings(project, trust_store=trust_store)
    assert loaded.settings.sandbox.allowed_domains == ("a.test",)
    assert loaded.pending_trust is not None
    assert loaded.pending_trust.what == ("sandbox: allowed domains: b.test",)
