"""Permission rules and the matcher that decides tool calls against them."""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr
from aimon_core.permission._approvals import (
    AgentApprovalStore,
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalScope,
    SessionApprovals,
    TurnApprovals,
    agent_approvals_path,
    approval_rule,
)
from aimon_core.permission._bash import parse_command
from aimon_core.permission._broader import broader_rule
from aimon_core.permission._gate import decide, decide_name, decide_server, print_mode_gate
from aimon_core.permission._guard import PathGuard, protected_reason, read_filter
from aimon_core.permission._matcher import (
    evaluate_command,
    evaluate_tool,
    is_read_only_command,
)
from aimon_core.permission._modes import (
    PermissionMode,
    PermissionModeError,
    check_bypass_allowed,
    parse_mode,
)
from aimon_core.permission._paths import evaluate_path
from aimon_core.permission._policy import (
    Approver,
    PermissionPolicy,
    denied_message,
    interactive_gate,
)
from aimon_core.permission._restrict import restricted_gate, tool_restrictions
from aimon_core.permission._rules import (
    EDIT_TOOLS,
    Decision,
    PermissionRules,
    Rule,
    RuleError,
    Verdict,
    parse_rule,
    unknown_tool,
)
from aimon_core.permission._syntax import ParsedCommand, Redirect, SimpleCommand

if TYPE_CHECKING:
    from aimon_core.permission._sandboxed import (
        NetworkQuestions,
        SandboxedBash,
        excluded_matcher,
        sandbox_paths,
    )

# The sandbox's side of the rules loads on first use: only a sandboxed runtime needs it.
__getattr__ = lazy_getattr(__name__, {"NetworkQuestions": "_sandboxed",
                                      "SandboxedBash": "_sandboxed",
                                      "excluded_matcher": "_sandboxed",
                                      "sandbox_paths": "_sandboxed"})

__all__ = [
    "EDIT_TOOLS",
    "AgentApprovalStore",
    "ApprovalAnswer",
    "ApprovalRequest",
    "ApprovalRequested",
    "ApprovalResolved",
    "ApprovalScope",
    "Approver",
    "Decision",
    "NetworkQuestions",
    "ParsedCommand",
    "PathGuard",
    "PermissionMode",
    "PermissionModeError",
    "PermissionPolicy",
    "PermissionRules",
    "Redirect",
    "Rule",
    "RuleError",
    "SandboxedBash",
    "SessionApprovals",
    "SimpleCommand",
    "TurnApprovals",
    "Verdict",
    "agent_approvals_path",
    "approval_rule",
    "broader_rule",
    "check_bypass_allowed",
    "decide",
    "decide_name",
    "decide_server",
    "denied_message",
    "evaluate_command",
    "evaluate_path",
    "evaluate_tool",
    "excluded_matcher",
    "interactive_gate",
    "is_read_only_command",
    "parse_command",
    "parse_mode",
    "parse_rule",
    "print_mode_gate",
    "protected_reason",
    "read_filter",
    "restricted_gate",
    "sandbox_paths",
    "tool_restrictions",
    "unknown_tool",
]
