"""The `sandbox` settings block, as Claude Code users write it: checked, merged, gated by trust.

    "sandbox": {
      "enabled": true, "autoAllowBashIfSandboxed": true, "excludedCommands": ["docker:*"],
      "allowUnsandboxedCommands": true, "failIfUnavailable": false,
      "network": {"allowedDomains": ["github.com", "*.npmjs.org"], "deniedDomains": [],
                  "allowUnixSockets": [], "allowAllUnixSockets": false,
                  "allowLocalBinding": false},
      "filesystem": {"allowWrite": ["~/.kube"], "denyWrite": [], "denyRead": ["~/.gnupg"],
                     "allowRead": []}
    }

Layers merge as Claude Code merges them: a value set later wins, lists add up. Paths: `~/`
is the home folder, `/` and `//` start an absolute path, anything else is relative to the
project; a trailing `/**` means the folder. Keys of Claude Code's block that aimon does not use
(`ignoreViolations`, `network.httpProxyPort`, ...) load with the usual "not used" note. What
would widen the boundary from a project file (turning the sandbox on or off, allowing paths,
domains, sockets or unsandboxed commands) waits for the folder's trust like other risky
settings; what narrows it always applies.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol

SANDBOX_KEYS = ("enabled", "autoAllowBashIfSandboxed", "excludedCommands",
                "allowUnsandboxedCommands", "failIfUnavailable", "network", "filesystem")
NETWORK_KEYS = ("allowedDomains", "deniedDomains", "allowUnixSockets", "allowAllUnixSockets",
                "allowLocalBinding")
FILESYSTEM_KEYS = ("allowWrite", "denyWrite", "denyRead", "allowRead")
# A near miss of one of these is refused, not noted: a typo would leave the user unprotected.
_PROTECTIVE = ("enabled", "failIfUnavailable", "deniedDomains", "denyWrite", "denyRead")
_DOMAIN = re.compile(
    r"(?:\*|(?:\*\.)?[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?\.?",
    re.IGNORECASE)
_GLOB = re.compile(r"[*?\[]")

_FLAGS = (("enabled", "enabled"), ("autoAllowBashIfSandboxed", "auto_allow"),
          ("allowUnsandboxedCommands", "allow_unsandboxed"),
          ("failIfUnavailable", "fail_if_unavailable"))
_NETWORK_FLAGS = (("allowAllUnixSockets", "allow_all_unix_sockets"),
                  ("allowLocalBinding", "allow_local_binding"))
_LISTS = (("excludedCommands", "excluded_commands"),)
_NETWORK_LISTS = (("allowedDomains", "allowed_domains"), ("deniedDomains", "denied_domains"),
                  ("allowUnixSockets", "allow_unix_sockets"))
_FILESYSTEM_LISTS = (("allowWrite", "allow_write"), ("denyWrite", "deny_write"),
                     ("denyRead", "deny_read"), ("allowRead", "allow_read"))
# Which settings would widen the boundary (or switch it), by the value that widens.
_WIDENING_FLAGS = {"enabled": None, "auto_allow": True, "allow_unsandboxed": True,
                   "fail_if_unavailable": False, "allow_all_unix_sockets": True,
                   "allow_local_binding": True}
_WIDENING_LISTS = ("allowed_domains", "allow_unix_sockets", "allow_write", "allow_read")


class _Reads(Protocol):
    """The parts of the settings checker this module uses (`_validate._Checker`)."""

    def fail(self, key: str, reason: str) -> NoReturn: ...

    def expected(self, key: str, what: str, value: Any) -> NoReturn: ...

    def mapping(self, value: Any, key: str, allowed: tuple[str, ...] | None
                ) -> dict[str, Any]: ...

    def string(self, value: Any, key: str, *, empty_ok: bool = False) -> str: ...

    def items(self, value: Any, key: str, check: Callable[[Any, str], Any]
              ) -> tuple[Any, ...]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxLayer:
    """What one settings file says in its `sandbox` block (None and empty: not said)."""

    enabled: bool | None = None
    auto_allow: bool | None = None
    allow_unsandboxed: bool | None = None
    fail_if_unavailable: bool | None = None
    allow_all_unix_sockets: bool | None = None
    allow_local_binding: bool | None = None
    excluded_commands: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    allow_unix_sockets: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    deny_read: tuple[str, ...] = ()
    allow_read: tuple[str, ...] = ()

    def widening(self) -> dict[str, Any]:
        """Return the settings that need the folder's trust, by field name (empty: none)."""
        parts: dict[str, Any] = {}
        for name, wide in _WIDENING_FLAGS.items():
            value = getattr(self, name)
            if value is not None and (wide is None or value == wide):
                parts[name] = value
        for name in _WIDENING_LISTS:
            if getattr(self, name):
                parts[name] = list(getattr(self, name))
        return parts

    def kept(self, accept: Callable[[str, Any], bool]) -> SandboxLayer | None:
        """Return what narrows the boundary, and the widening items `accept` takes.

        An item is one setting that widens (`enabled`, `auto_allow`, ...) with its value, or
        one entry of a widening list (an allowed domain, a writable path). None if nothing is
        left.
        """
        changed: dict[str, Any] = {}
        for name, value in self.widening().items():
            if isinstance(value, list):
                changed[name] = tuple(v for v in value if accept(name, v))
            elif not accept(name, value):
                changed[name] = None
        left = dataclasses.replace(self, **changed)
        return None if left == SandboxLayer() else left

    def describe_widening(self) -> list[str]:
        """Say what the widening settings would do, one line each."""
        parts = self.widening()
        words = {
            "enabled": "turns the sandbox " + ("on" if self.enabled else "off"),
            "auto_allow": "runs sandboxed commands without asking",
            "allow_unsandboxed": "lets commands ask to run outside the sandbox",
            "fail_if_unavailable": "runs commands unsandboxed where the sandbox is missing",
            "allow_all_unix_sockets": "lets sandboxed commands open Unix sockets",
            "allow_local_binding": "lets sandboxed commands bind local ports",
        }
        lines = [f"sandbox: {words[name]}" for name in words if name in parts]
        lines += [f"sandbox: {name.replace('_', ' ')}: {', '.join(parts[name])}"
                  for name in _WIDENING_LISTS if name in parts]
        return lines


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSettings:
    """The merged `sandbox` settings (Claude Code's defaults where nothing was said)."""

    enabled: bool = False
    auto_allow: bool = True
    allow_unsandboxed: bool = True
    fail_if_unavailable: bool = False
    allow_all_unix_sockets: bool = False
    allow_local_binding: bool = False
    excluded_commands: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    allow_unix_sockets: tuple[str, ...] = ()
    allow_write: tuple[Path, ...] = ()
    deny_write: tuple[Path, ...] = ()
    deny_read: tuple[Path, ...] = ()
    allow_read: tuple[Path, ...] = ()


def check_sandbox(reads: _Reads, value: Any) -> SandboxLayer:
    """Check a settings file's `sandbox` block; raise through `reads.fail` at the first fault."""
    data = _mapping(reads, value, "sandbox", SANDBOX_KEYS)
    found: dict[str, Any] = {}
    for key, name in _FLAGS:
        if key in data:
            found[name] = _flag(reads, data[key], f"sandbox.{key}")
    if "excludedCommands" in data:
        found["excluded_commands"] = reads.items(
            data["excludedCommands"], "sandbox.excludedCommands",
            lambda v, k: _command_pattern(reads, v, k))
    if "network" in data:
        found.update(_network(reads, data["network"]))
    if "filesystem" in data:
        network = _mapping(reads, data["filesystem"], "sandbox.filesystem", FILESYSTEM_KEYS)
        for key, name in _FILESYSTEM_LISTS:
            if key in network:
                found[name] = reads.items(network[key], f"sandbox.filesystem.{key}",
                                          lambda v, k: _path(reads, v, k))
    return SandboxLayer(**found)


def _mapping(reads: _Reads, value: Any, key: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    if isinstance(value, dict):
        for name in value:
            guess = _near(name, allowed) if isinstance(name, str) else None
            if name not in allowed and guess in _PROTECTIVE:
                reads.fail(f"{key}.{name}", f"unknown key; did you mean {guess!r}?")
    return reads.mapping(value, key, allowed)


def _near(name: str, allowed: tuple[str, ...]) -> str | None:
    folded = {a.lower(): a for a in allowed}
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.8)
    return folded.get(name.lower()) or (close[0] if close else None)


def _flag(reads: _Reads, value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        reads.expected(key, "true or false", value)
    return value


def _network(reads: _Reads, value: Any) -> dict[str, Any]:
    data = _mapping(reads, value, "sandbox.network", NETWORK_KEYS)
    found: dict[str, Any] = {}
    for key, name in _NETWORK_FLAGS:
        if key in data:
            found[name] = _flag(reads, data[key], f"sandbox.network.{key}")
    for key, name in _NETWORK_LISTS:
        if key not in data:
            continue
        check = ((lambda v, k: reads.string(v, k)) if key == "allowUnixSockets"
                 else (lambda v, k: _domain(reads, v, k)))
        found[name] = reads.items(data[key], f"sandbox.network.{key}", check)
    return found


def _domain(reads: _Reads, value: Any, key: str) -> str:
    text = reads.string(value, key).strip()
    if not _DOMAIN.fullmatch(text):
        reads.fail(key, f"{text!r} is not a domain (example.com, *.example.com, "
                        "example.com:443, 127.0.0.1:8080, [::1]:8080)")
    return text


def _command_pattern(reads: _Reads, value: Any, key: str) -> str:
    from aimon_core.permission import RuleError, parse_rule

    text = reads.string(value, key).strip()
    try:
        parse_rule(f"Bash({text})")
    except RuleError as error:
        reads.fail(key, f"{text!r} is not a command pattern: {error.reason}")
    return text


def _path(reads: _Reads, value: Any, key: str) -> str:
    text = reads.string(value, key).strip()
    bare = text.removesuffix("/**").rstrip("/") or "/"
    if _GLOB.search(bare):
        reads.fail(key, f"{text!r}: the sandbox takes folders and files; a pattern other "
                        "than a final /** cannot be enforced")
    return text


def resolve_path(text: str, root: Path) -> Path:
    """Resolve a `sandbox.filesystem` entry: `~/`, `/` or `//` absolute, else project-relative."""
    bare = text.removesuffix("/**").rstrip("/") or "/"
    if bare.startswith("//"):
        bare = bare[1:]
    return Path(os.path.normpath(root / Path(bare).expanduser()))


def merge_sandbox(layers: Iterable[SandboxLayer], root: Path) -> SandboxSettings:
    """Merge the layers in order: a value set later wins, lists add up (first kept)."""
    flags: dict[str, Any] = {}
    lists: dict[str, list[Any]] = {}
    for layer in layers:
        for field in dataclasses.fields(layer):
            value = getattr(layer, field.name)
            if isinstance(value, bool):
                flags[field.name] = value
            elif isinstance(value, tuple):
                bucket = lists.setdefault(field.name, [])
                bucket.extend(v for v in value if v not in bucket)
    values: dict[str, Any] = {**flags, **{k: tuple(v) for k, v in lists.items()}}
    for _, name in _FILESYSTEM_LISTS:
        values[name] = tuple(dict.fromkeys(resolve_path(t, root) for t in lists.get(name, ())))
    return SandboxSettings(**values)

