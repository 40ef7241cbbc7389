"""Reading one settings file: strict JSON, then a check of every key into a `LayerValues`."""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, cast
from urllib.parse import urlsplit

from aimon_core.config._mcp import MCPServerConfig, check_mcp_servers
from aimon_core.config._observe import ObserveLayer, check_observe
from aimon_core.config._sandbox import SandboxLayer, check_sandbox
from aimon_core.config._settings import (
    PERMISSION_MODES,
    PROVIDERS,
    HookCommandConfig,
    HookMatcherConfig,
    PermissionMode,
    Provider,
    SettingsError,
    key_path,
)
from aimon_core.hook import UNSUPPORTED_CLAUDE_EVENTS
from aimon_core.permission import RuleError, parse_rule

TOP_KEYS = (
    "$schema", "model", "provider", "base_url", "permissions", "hooks", "env",
    "shellEnvPassthrough", "mcpServers", "compaction", "sandbox", "tools",
    # Hard caps on spending, price overrides, what traces keep, the REPL's status footer
    # (config/_observe.py).
    "budget", "prices", "tracing", "footer",
    # Read by the service alone (aimon_core/service/_settings.py), from the user's file.
    "service",
    # Where sessions are kept (aimon_core/stores/_backend.py), from the user's file only.
    "store",
)
COMPACTION_KEYS = ("threshold", "contextWindow", "toolResultLimitTokens")
TOOLS_KEYS = ("concurrency", "searchThreshold", "schemaGate")
CONCURRENCY = ("parallel", "serial")
# A window or limit below this cannot hold a system prompt and one exchange.
_MIN_TOKENS = 1_000
PERMISSION_KEYS = ("allow", "ask", "deny", "defaultMode", "additionalDirectories")
_MATCHER_KEYS = ("matcher", "hooks")
_COMMAND_KEYS = ("type", "command", "timeout", "async", "statusMessage", "if")
# Hook types Claude Code has and aimon does not run: such hooks are skipped with a warning.
# A "prompt" hook would need a model call per event; aimon leaves that to command hooks.
_SKIPPED_HOOK_TYPES = ("prompt", "agent", "http")
# An unknown key this close to a protective one is a typo that would leave the user
# unprotected: refuse the file rather than warn (fail closed).
_PROTECTIVE = ("deny", "ask")
_MAX_SETTINGS_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerValues:
    """What one layer sets; None and empty mean "not set here"."""

    model: str | None = None
    provider: Provider | None = None
    base_url: str | None = None
    default_mode: PermissionMode | None = None
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    additional_directories: tuple[str, ...] = ()
    hooks: tuple[tuple[str, tuple[HookMatcherConfig, ...]], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    shell_env_passthrough: tuple[str, ...] = ()
    mcp_servers: tuple[tuple[str, MCPServerConfig], ...] = ()
    compaction_threshold: float | None = None
    context_window: int | None = None
    tool_result_limit_tokens: int | None = None
    sandbox: SandboxLayer | None = None
    tool_concurrency: str | None = None
    tool_search_threshold: float | None = None
    tool_schema_gate: str | None = None
    observe: ObserveLayer | None = None
    # Problems that do not stop loading, e.g. an allow rule naming an unknown tool.
    warnings: tuple[str, ...] = ()
    # Keys aimon does not use (Claude Code's, a later version's), as key paths.
    unused: tuple[str, ...] = ()
    # Hooks that will never run here (an event aimon does not fire, a "prompt" hook), one
    # phrase each.
    skipped: tuple[str, ...] = ()


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            # A second "deny" would silently replace the first one: refuse the file instead.
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def read_layer(path: Path, display: str, *, inside: Path | None = None, claude: bool = False
               ) -> LayerValues | None:
    """Read and check one settings file; return None if it does not exist.

    It is read as aimon reads any file by itself (`read_own`): a project's file (`inside` the
    project) that leads out of it, or any special file, stops start-up as a broken one does.
    """
    from aimon_core.filesystem import read_own

    try:
        data = read_own(path, inside=inside, limit=_MAX_SETTINGS_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        raise SettingsError(
            path=path, key=None, display=display, reason=f"cannot read: {error.strerror or error}"
        ) from None
    if len(data) > _MAX_SETTINGS_BYTES:
        raise SettingsError(path=path, key=None, display=display,
                            reason=f"larger than {_MAX_SETTINGS_BYTES // 1024 // 1024} MB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SettingsError(
            path=path, key=None, display=display,
            reason=f"not valid UTF-8 (byte {error.start})",
        ) from None
    return check_layer(parse_json(text, path, display), path=path, display=display,
                       claude=claude)


def parse_json(text: str, path: Path | None, display: str) -> Any:
    """Parse strict JSON, raising SettingsError with the line and column of a syntax error."""
    if not text.strip():
        # An empty file may be a torn write of a file that held deny rules: never read it as {}.
        raise SettingsError(
            path=path, key=None, display=display,
            reason="the file is empty; write {} for no settings",
        )
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise SettingsError(
            path=path, key=None, display=display, line=error.lineno, column=error.colno,
            reason=f"invalid JSON: {error.msg}",
        ) from None
    except _DuplicateKeyError as error:
        raise SettingsError(
            path=path, key=None, display=display,
            reason=f"the key {error.key!r} appears twice in one object",
        ) from None
    except ValueError as error:
        raise SettingsError(path=path, key=None, display=display, reason=str(error)) from None
    except RecursionError:
        raise SettingsError(
            path=path, key=None, display=display, reason="the JSON is nested too deeply"
        ) from None


def check_layer(value: Any, *, path: Path | None, display: str, claude: bool = False
                ) -> LayerValues:
    """Check a parsed settings document; raise SettingsError naming the first bad key.

    `claude`: the document is one of Claude Code's settings files.
    """
    return _Checker(path=path, display=display, claude=claude).layer(value)


def _describe(value: Any) -> str:
    match value:
        case None:
            return "null"
        case bool():
            return "true" if value else "false"
        case int() | float():
            return "a number"
        case str():
            return "a string"
        case list():
            return "a list"
        case dict():
            return "an object"
    return type(value).__name__


@dataclass(frozen=True, slots=True)
class _Checker:
    path: Path | None
    display: str
    # One of Claude Code's settings files: its keys mean what they mean to Claude Code.
    claude: bool = False
    warnings: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def fail(self, key: str, reason: str) -> NoReturn:
        raise SettingsError(path=self.path, key=key or None, display=self.display, reason=reason)

    def expected(self, key: str, what: str, value: Any) -> NoReturn:
        self.fail(key, f"expected {what}, got {_describe(value)}")

    def mapping(self, value: Any, key: str, allowed: tuple[str, ...] | None) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            self.expected(key, "an object", value)
        for name in value:
            if not isinstance(name, str):
                self.fail(key, f"keys must be strings, got {name!r}")
            if allowed is not None and name not in allowed:
                self.unknown_key(key_path(key, name), name, allowed)
        return {k: v for k, v in value.items() if allowed is None or k in allowed}

    def unknown_key(self, key: str, name: str, allowed: tuple[str, ...]) -> None:
        """Note a key aimon does not use; refuse a near miss of a protective key."""
        guess = _guess(name, allowed)
        if guess in _PROTECTIVE:
            self.fail(key, f"unknown key; did you mean {guess!r}?")
        self.unused.append(f"{key} (did you mean {guess!r}?)" if guess else key)

    def string(self, value: Any, key: str, *, empty_ok: bool = False) -> str:
        if not isinstance(value, str):
            self.expected(key, "a string", value)
        if not empty_ok and not value.strip():
            self.fail(key, "must not be empty")
        if "\x00" in value:
            self.fail(key, "contains a NUL character")
        return value

    def choice(self, value: Any, key: str, choices: tuple[str, ...]) -> str:
        text = self.string(value, key)
        if text not in choices:
            self.fail(key, f"{text!r} is not one of {', '.join(map(repr, choices))}")
        return text

    def items(self, value: Any, key: str, check: Callable[[Any, str], Any]) -> tuple[Any, ...]:
        if not isinstance(value, list | tuple):
            self.expected(key, "a list", value)
        return tuple(check(item, f"{key}[{index}]") for index, item in enumerate(value))

    def layer(self, value: Any) -> LayerValues:
        data = self.mapping(value, "", TOP_KEYS)
        permissions = self.permissions(data["permissions"]) if "permissions" in data else {}
        compaction = self.compaction(data["compaction"]) if "compaction" in data else {}
        tools = self.tools(data["tools"]) if "tools" in data else {}
        return LayerValues(
            model=self.optional(data, "model", self.string),
            provider=cast(Provider | None, self.optional(
                data, "provider", lambda v, k: self.choice(v, k, PROVIDERS))),
            base_url=self.optional(data, "base_url", self.url),
            hooks=self.hooks(data["hooks"]) if "hooks" in data else (),
            env=self.env(data["env"]) if "env" in data else (),
            shell_env_passthrough=self.items(
                data["shellEnvPassthrough"], "shellEnvPassthrough", self.env_name
            ) if "shellEnvPassthrough" in data else (),
            mcp_servers=self.mcp_servers(data),
            sandbox=check_sandbox(self, data["sandbox"]) if "sandbox" in data else None,
            observe=check_observe(self, data),
            warnings=tuple(self.warnings),
            unused=tuple(self.unused),
            skipped=tuple(self.skipped),
            **permissions,
            **compaction,
            **tools,
        )

    def mcp_servers(self, data: dict[str, Any]) -> tuple[tuple[str, MCPServerConfig], ...]:
        if "mcpServers" not in data:
            return ()
        if self.claude:
            # Claude Code reads servers from .mcp.json and ~/.claude.json, never from its
            # settings files: a server written here runs in neither program.
            self.warnings.append(f"{self.display}: mcpServers: ignored, as Claude Code ignores "
                                 "it here; MCP servers belong in .mcp.json")
            return ()
        return check_mcp_servers(data["mcpServers"], key="mcpServers", path=self.path,
                                 display=self.display)

    def optional(self, data: dict[str, Any], key: str, check: Callable[[Any, str], Any]) -> Any:
        return check(data[key], key) if key in data else None

    def url(self, value: Any, key: str) -> str:
        text = self.string(value, key)
        parts = urlsplit(text)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            self.fail(key, f"{text!r} is not an http:// or https:// URL")
        return text

    def rule(self, value: Any, key: str) -> str:
        # Whether the rule names a tool is checked against the runtime's tools, when one is
        # built (`aimon_core.runtime`): a library user's own tool may be named too.
        text = self.string(value, key)
        try:
            rule = parse_rule(text)
        except RuleError as error:
            self.fail(key, f"invalid rule {text!r}: {error.reason}")
        return rule.text

    def allow_rule(self, value: Any, key: str) -> str | None:
        """Read an allow rule; one aimon cannot read is skipped with a warning (None).

        Skipping an allow rule only means asking where it would have allowed: fail closed.
        Deny and ask rules that cannot be read stop loading (`rule`).
        """
        text = self.string(value, key)
        try:
            return parse_rule(text).text
        except RuleError as error:
            self.warnings.append(f"{self.display}: {key}: allow rule {text!r} skipped: "
                                 f"{error.reason}; such calls are asked about")
            return None

    def permissions(self, value: Any) -> dict[str, Any]:
        data = self.mapping(value, "permissions", PERMISSION_KEYS)
        result: dict[str, Any] = {}
        for name in ("allow", "ask", "deny"):
            if name in data:
                check = self.allow_rule if name == "allow" else self.rule
                rules = self.items(data[name], f"permissions.{name}", check)
                result[name] = tuple(rule for rule in rules if rule is not None)
        if "defaultMode" in data:
            result["default_mode"] = PermissionMode(self.choice(
                data["defaultMode"], "permissions.defaultMode", PERMISSION_MODES
            ))
        if "additionalDirectories" in data:
            result["additional_directories"] = self.items(
                data["additionalDirectories"], "permissions.additionalDirectories", self.string
            )
        return result

    def compaction(self, value: Any) -> dict[str, Any]:
        data = self.mapping(value, "compaction", COMPACTION_KEYS)
        result: dict[str, Any] = {}
        if "threshold" in data:
            threshold = data["threshold"]
            if (isinstance(threshold, bool) or not isinstance(threshold, int | float)
                    or not 0.1 <= threshold <= 1):
                self.fail("compaction.threshold",
                          f"expected a share of the window between 0.1 and 1, got {threshold!r}")
            result["compaction_threshold"] = float(threshold)
        for name, field_name in (("contextWindow", "context_window"),
                                 ("toolResultLimitTokens", "tool_result_limit_tokens")):
            if name in data:
                result[field_name] = self.tokens(data[name], f"compaction.{name}")
        return result

    def tools(self, value: Any) -> dict[str, Any]:
        data = self.mapping(value, "tools", TOOLS_KEYS)
        result: dict[str, Any] = {}
        if "concurrency" in data:
            result["tool_concurrency"] = self.choice(data["concurrency"], "tools.concurrency",
                                                     CONCURRENCY)
        if "schemaGate" in data:
            result["tool_schema_gate"] = self.choice(data["schemaGate"], "tools.schemaGate",
                                                     ("strict", "warn"))
        if "searchThreshold" in data:
            share = data["searchThreshold"]
            if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
                self.fail("tools.searchThreshold",
                          f"expected a share of the window between 0 and 1, got {share!r}")
            result["tool_search_threshold"] = float(share)
        return result

    def tokens(self, value: Any, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < _MIN_TOKENS:
            self.fail(key, f"expected a whole number of tokens, at least {_MIN_TOKENS:,}, "
                           f"got {value!r}")
        return value

    def env(self, value: Any) -> tuple[tuple[str, str], ...]:
        data = self.mapping(value, "env", None)
        for name, item in data.items():
            key = key_path("env", name)
            if not name or "=" in name or "\x00" in name:
                self.fail(key, "is not a valid environment variable name")
            self.string(item, key, empty_ok=True)
        return tuple(data.items())

    def env_name(self, value: Any, key: str) -> str:
        name = self.string(value, key)
        if "=" in name or "\x00" in name:
            self.fail(key, "is not a valid environment variable name")
        return name

    def hooks(self, value: Any) -> tuple[tuple[str, tuple[HookMatcherConfig, ...]], ...]:
        data = self.mapping(value, "hooks", None)
        result = []
        for event, groups in data.items():
            if not event.strip():
                self.fail("hooks", "an event name must not be empty")
            key = key_path("hooks", event)
            matchers = self.items(groups, key, self.matcher)
            if event in UNSUPPORTED_CLAUDE_EVENTS:  # Claude Code's, never fired here
                self.skipped.append(f"{key}: aimon has no {event!r} event")
                continue
            kept = tuple(group for group in matchers if group.hooks)
            if kept:
                result.append((event, kept))
        return tuple(result)

    def matcher(self, value: Any, key: str) -> HookMatcherConfig:
        data = self.mapping(value, key, _MATCHER_KEYS)
        if "hooks" not in data:
            self.fail(key, "missing 'hooks': the list of commands to run")
        matcher = self.string(data["matcher"], f"{key}.matcher", empty_ok=True) \
            if "matcher" in data else None
        commands = self.items(data["hooks"], f"{key}.hooks", self.command)
        return HookMatcherConfig(matcher=matcher, hooks=tuple(c for c in commands if c))

    def command(self, value: Any, key: str) -> HookCommandConfig | None:
        if isinstance(value, Mapping) and value.get("type") in _SKIPPED_HOOK_TYPES:
            self.skipped.append(f"{key}: {value['type']!r} hooks are not run by aimon")
            return None
        data = self.mapping(value, key, _COMMAND_KEYS)
        kind = self.string(data.get("type", "command"), f"{key}.type")
        if kind != "command":
            self.skipped.append(f"{key}: unknown hook type {kind!r}")
            return None
        if "command" not in data:
            self.fail(key, "missing 'command'")
        timeout = data.get("timeout")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float)
            or not math.isfinite(timeout) or timeout <= 0
        ):
            self.fail(f"{key}.timeout", f"expected a positive number of seconds, got {timeout!r}")
        run_async = data.get("async", False)
        if not isinstance(run_async, bool):
            self.expected(f"{key}.async", "true or false", run_async)
        return HookCommandConfig(
            # Like Claude Code and aimon_core.hook, a hook without a type is a command hook.
            type=kind,
            command=self.string(data["command"], f"{key}.command"),
            timeout=None if timeout is None else float(timeout),
            async_=run_async,
            status_message=self.string(data["statusMessage"], f"{key}.statusMessage",
                                       empty_ok=True) if "statusMessage" in data else None,
            condition=self.condition(data["if"], f"{key}.if") if "if" in data else None,
        )

    def condition(self, value: Any, key: str) -> str:
        text = self.string(value, key)
        try:
            parse_rule(text)
        except RuleError as error:
            # A condition aimon cannot read would make the hook run on every call or none.
            self.fail(key, f"invalid condition {text!r}: {error.reason}")
        return text


def _guess(name: str, allowed: tuple[str, ...]) -> str | None:
    names = [a for a in allowed if not a.startswith("$")]
    by_lower = {a.lower().replace("_", ""): a for a in names}
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    folded = name.lower().replace("_", "").replace("-", "")
    return by_lower.get(folded) or (close[0] if close else None)
