"""Rules a library tool reads itself (the seeds' CustomToolPermissionAware).

A built-in tool's rules are read by aimon (`Bash(git:*)`, `Read(./src/**)`). A library tool
whose calls deserve finer rules than "the whole tool" brings its own reading of the text in
`MyTool(...)`: allow, ask and deny rules then reach its calls exactly as they reach the
built-ins', and "always allow" remembers the rule the tool names for a call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Protocol


class RuleMatcher(Protocol):
    """A tool's own reading of the specifier in its rules (`Deploy(env:prod*)`)."""

    def matches(self, specifier: str, tool_input: Mapping[str, Any]) -> bool:
        """Tell whether the rule `Tool(specifier)` covers a call with `tool_input`."""
        ...

    def specifier(self, tool_input: Mapping[str, Any]) -> str | None:
        """Return the narrowest specifier that covers this call (remembered by "always
        allow"), or None when none should be remembered."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleSubject:
    """The tool reads its rules' specifiers itself, through `matcher`.

    An error in the matcher counts as a match for deny and ask rules and as no match for
    allow rules: a broken matcher never lets a call through that a rule may have stopped.
    """

    matcher: RuleMatcher


@dataclass(frozen=True, slots=True)
class ParamPatterns:
    """Rules `Tool(param:pattern)`: a shell-style pattern over string parameters.

    `Deploy(env:staging*)` covers a call whose `env` is `staging-eu`. A parameter not in
    `params`, or a call without it, is never covered.
    """

    params: tuple[str, ...]

    def matches(self, specifier: str, tool_input: Mapping[str, Any]) -> bool:
        """Tell whether `param:pattern` covers the call's string `param`."""
        param, colon, pattern = specifier.partition(":")
        value = tool_input.get(param.strip())
        return (bool(colon) and param.strip() in self.params and isinstance(value, str)
                and fnmatchcase(value, pattern.strip()))

    def specifier(self, tool_input: Mapping[str, Any]) -> str | None:
        """Return `param:value` for the first parameter the call gives, patterns escaped."""
        for param in self.params:
            value = tool_input.get(param)
            if isinstance(value, str) and value and ")" not in value:
                return f"{param}:{_literal(value)}"
        return None


def _literal(value: str) -> str:
    """Return a pattern that matches `value` only."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in value)
