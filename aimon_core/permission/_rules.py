"""Permission rules: their text form, parsing, and the values a check returns.

A rule is ``Tool`` (the whole tool) or ``Tool(specifier)``. Bash specifiers are command
patterns, split into words like a shell would (quotes group words):

- ``Bash(npm install)``: the argv must equal these words exactly;
- ``Bash(git:*)`` or ``Bash(git *)``: these words, then any arguments (words, not characters:
  ``Bash(git:*)`` does not match ``gitx``); several words work too (``Bash(npm run test:*)``);
- ``Bash(ls*)``: a trailing ``*`` on the last word matches any word starting with that text,
  then any arguments;
- ``Bash(*)``: any command, like ``Bash``.

A ``*`` anywhere else in a Bash pattern is an error. Path tools (``Read``, ``Edit`` and the
tools they govern) take path globs, see ``_paths``. ``WebFetch`` takes ``domain:HOST``. Other
tools (including MCP tools such as ``mcp__server__tool`` and server-wide ``mcp__server``)
take any specifier text.
"""

from __future__ import annotations

import enum
import functools
import re
import shlex
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from aimon_core.tools import CLAUDE_CODE_TOOLS, closest_name, is_mcp_name

EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "NotebookRead"})
PATH_TOOLS = EDIT_TOOLS | READ_TOOLS

_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*(__\*)?")


class Verdict(enum.Enum):
    """What to do with a tool call."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@dataclass(frozen=True, slots=True, kw_only=True)
class Decision:
    """A verdict, why it was reached, and the rule text that decided it, if any.

    ``parts``: for an ASK on part of a command line (``rm -rf build`` of ``git status && rm
    -rf build``), those parts as written; the reason names them too.
    """

    verdict: Verdict
    reason: str
    rule: str | None = None
    parts: tuple[str, ...] = field(default=(), compare=False)


class RuleError(ValueError):
    """A permission rule's text is malformed."""

    def __init__(self, rule: str, reason: str) -> None:
        super().__init__(f"invalid permission rule {rule!r}: {reason}")
        self.rule = rule
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One parsed rule: the tool it names and its optional specifier."""

    tool: str
    specifier: str | None
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExactPattern:
    """Argv equal to ``words``."""

    words: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefixPattern:
    """Argv starting with ``words``, then anything."""

    words: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StemPattern:
    """Argv starting with ``words``, then a word starting with ``stem``, then anything."""

    words: tuple[str, ...]
    stem: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AnyPattern:
    """Any argv."""


CommandPattern = ExactPattern | PrefixPattern | StemPattern | AnyPattern


def parse_rule(text: str) -> Rule:
    """Parse one rule such as ``Bash(git:*)`` or ``Read(/tmp/**)``; raise RuleError if bad."""
    stripped = text.strip()
    if not stripped:
        raise RuleError(text, "empty rule")
    if "(" not in stripped and ")" not in stripped:
        _check_tool_name(text, stripped)
        return Rule(tool=stripped, specifier=None, text=stripped)
    tool, opening, rest = stripped.partition("(")
    if not opening or not rest.endswith(")"):
        raise RuleError(text, "unbalanced parentheses: expected Tool(specifier)")
    _check_tool_name(text, tool)
    specifier = rest[:-1].strip()
    if not specifier:
        raise RuleError(text, "empty specifier inside parentheses")
    if not _balanced(specifier):
        raise RuleError(text, "unbalanced parentheses or quotes in specifier")
    if "\x00" in specifier:
        raise RuleError(text, "NUL byte in specifier")
    if tool == "Bash":
        command_pattern(specifier, rule=text)
    elif tool == "WebFetch" and not specifier.startswith("domain:"):
        raise RuleError(text, "WebFetch rules look like WebFetch(domain:example.com)")
    elif tool == "WebFetch" and not specifier.removeprefix("domain:").strip():
        raise RuleError(text, "missing host after 'domain:'")
    return Rule(tool=tool, specifier=specifier, text=stripped)


def _check_tool_name(text: str, tool: str) -> None:
    if not tool:
        raise RuleError(text, "missing tool name before '('")
    if not _TOOL_NAME.fullmatch(tool):
        raise RuleError(text, f"{tool!r} is not a tool name")


def unknown_tool(rule: Rule, known: Collection[str]) -> str | None:
    """Say why ``rule`` names no known tool (with the closest name), or None if it does one.

    ``known`` are the tools of the runtime the rule applies to (every name its providers may
    give, a library user's own tools included); Claude Code's tools and every ``mcp__`` tool
    count as known too.
    """
    tool = rule.tool
    if tool in known or tool in CLAUDE_CODE_TOOLS or is_mcp_name(tool):
        return None
    close = closest_name(tool, {*known, *CLAUDE_CODE_TOOLS})
    fixed = f"{close}({rule.specifier})" if close and rule.specifier is not None else close
    hint = f"; did you mean {fixed}?" if fixed else ""
    return f"{tool!r} is not a tool aimon or Claude Code knows{hint}"


def _balanced(specifier: str) -> bool:
    depth = 0
    quote = ""
    for ch in specifier:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and not quote


@functools.lru_cache(maxsize=1024)
def command_pattern(specifier: str, *, rule: str = "") -> CommandPattern:
    """Compile a Bash rule specifier; raise RuleError naming ``rule`` if it is malformed."""
    rule = rule or f"Bash({specifier})"
    prefix = specifier.endswith(":*")
    body = specifier[:-2] if prefix else specifier
    try:
        words = tuple(shlex.split(body))
    except ValueError as error:
        raise RuleError(rule, f"cannot split into words: {error}") from None
    if not prefix and words and words[-1] == "*":
        prefix, words = True, words[:-1]
    if not words:
        if specifier.strip() == "*":
            return AnyPattern()
        raise RuleError(rule, "empty command pattern")
    if prefix and any("*" in w for w in words):
        raise RuleError(rule, "'*' is only supported at the end of a pattern")
    if prefix:
        return PrefixPattern(words=words)
    if any("*" in w for w in words[:-1]) or words[-1].count("*") > 1:
        raise RuleError(rule, "'*' is only supported at the end of a pattern")
    if words[-1].endswith("*"):
        return StemPattern(words=words[:-1], stem=words[-1][:-1])
    if "*" in words[-1]:
        raise RuleError(rule, "'*' is only supported at the end of a pattern")
    return ExactPattern(words=words)


def match_argv(pattern: CommandPattern, argv: tuple[str, ...]) -> int | None:
    """Return the index where the pattern's wildcard part of ``argv`` starts, None if no match."""
    match pattern:
        case AnyPattern():
            # Like the whole-tool rule: the user allowed everything, hatches included.
            return len(argv)
        case ExactPattern(words=words):
            return len(argv) if argv == words else None
        case PrefixPattern(words=words):
            return len(words) if argv[: len(words)] == words else None
        case StemPattern(words=words, stem=stem):
            n = len(words)
            if len(argv) > n and argv[:n] == words and argv[n].startswith(stem):
                return n
            return None


# Claude Code's other names for aimon's tools: a rule written with them names the same tool.
_ALIASES = {"Agent": "Task", "KillBash": "KillShell"}


def governs(rule_tool: str, tool: str) -> bool:
    """Tell whether a rule naming ``rule_tool`` applies to calls of ``tool``."""
    if rule_tool == tool or _ALIASES.get(rule_tool) == tool:
        return True
    if rule_tool == "Edit" and tool in EDIT_TOOLS:
        return True
    if rule_tool == "Read" and tool in READ_TOOLS:
        return True
    if rule_tool.startswith("mcp__"):
        server = rule_tool.removesuffix("__*")
        # `mcp__server` (one separator) and `mcp__server__*` name every tool of a server.
        whole_server = server.count("__") == 1
        return whole_server and tool.startswith(server + "__")
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRules:
    """Allow, ask and deny rules; deny beats ask beats allow."""

    allow: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    @classmethod
    def parse(
        cls,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
    ) -> PermissionRules:
        """Parse rule texts; raise RuleError on the first malformed one."""
        return cls(allow=_parse_all(allow), ask=_parse_all(ask), deny=_parse_all(deny))

    def merged(self, other: PermissionRules) -> PermissionRules:
        """Return the union of both rule sets, keeping first occurrences in order."""
        return PermissionRules(
            allow=_unique(self.allow + other.allow),
            ask=_unique(self.ask + other.ask),
            deny=_unique(self.deny + other.deny),
        )


def _parse_all(texts: Iterable[str]) -> tuple[Rule, ...]:
    if isinstance(texts, str):
        # A bare string would be read letter by letter as rules named "B", "a", "s", "h".
        raise TypeError(f"expected a list of rule texts, got the string {texts!r}")
    return tuple(parse_rule(text) for text in texts)


def _unique(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    return tuple(dict.fromkeys(rules))


def describe(verdict: Verdict, rule: Rule) -> str:
    """Say in words which rule produced ``verdict``."""
    match verdict:
        case Verdict.DENY:
            return f"denied by rule {rule.text}"
        case Verdict.ASK:
            return f"rule {rule.text} requires approval"
        case Verdict.ALLOW:
            return f"allowed by rule {rule.text}"
