"""Permission rules and the matcher that decides tool calls against them."""

from aimon_core.permission._bash import parse_command
from aimon_core.permission._gate import decide, print_mode_gate
from aimon_core.permission._matcher import (
    evaluate_command,
    evaluate_tool,
    is_read_only_command,
)
from aimon_core.permission._paths import evaluate_path
from aimon_core.permission._rules import (
    Decision,
    PermissionRules,
    Rule,
    RuleError,
    Verdict,
    parse_rule,
)
from aimon_core.permission._syntax import ParsedCommand, Redirect, SimpleCommand

__all__ = [
    "Decision",
    "ParsedCommand",
    "PermissionRules",
    "Redirect",
    "Rule",
    "RuleError",
    "SimpleCommand",
    "Verdict",
    "decide",
    "evaluate_command",
    "evaluate_path",
    "evaluate_tool",
    "is_read_only_command",
    "parse_command",
    "parse_rule",
    "print_mode_gate",
]
