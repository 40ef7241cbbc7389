"""aimon_core: the library underneath the aimon coding agent.

The names a program needs to run agents are here, loaded on first use (importing the package
costs nothing: `aimon --version` reads only `__version__`):

    from aimon_core import RuntimeParts, build_runtime, tool

Everything else lives in the domain packages (`aimon_core.runtime`, `.live`, `.agent`,
`.tools`, `.permission`, `.session`, `.llm`, `.hook`) and `aimon_core.testing`.
"""

from aimon_core._lazy import lazy_getattr

# Not `typing.TYPE_CHECKING`: importing `typing` (~2 ms) would be most of `aimon --version`;
# mypy reads the block below all the same.
TYPE_CHECKING = False

__version__ = "0.1.0"

if TYPE_CHECKING:
    from aimon_core.agent import (
        ApprovalAnswer,
        ApprovalRequested,
        ApprovalScope,
        ExecutionResult,
        Turn,
    )
    from aimon_core.live import LiveSession, LiveSessionEvent
    from aimon_core.runtime import (
        AgentAssembly,
        AgentRuntimeRegistry,
        Application,
        RuntimeFlags,
        RuntimeParts,
        RuntimeSetupError,
        build_runtime,
    )
    from aimon_core.tools import Tool, ToolContext, ToolResult, tool

__all__ = [
    "AgentAssembly",
    "AgentRuntimeRegistry",
    "Application",
    "ApprovalAnswer",
    "ApprovalRequested",
    "ApprovalScope",
    "ExecutionResult",
    "LiveSession",
    "LiveSessionEvent",
    "RuntimeFlags",
    "RuntimeParts",
    "RuntimeSetupError",
    "Tool",
    "ToolContext",
    "ToolResult",
    "Turn",
    "__version__",
    "build_runtime",
    "tool",
]

__getattr__ = lazy_getattr(__name__, {
    **dict.fromkeys(("ApprovalAnswer", "ApprovalRequested", "ApprovalScope", "ExecutionResult",
                     "Turn"), "agent"),
    **dict.fromkeys(("LiveSession", "LiveSessionEvent"), "live"),
    **dict.fromkeys(("AgentAssembly", "AgentRuntimeRegistry", "Application", "RuntimeFlags",
                     "RuntimeParts", "RuntimeSetupError", "build_runtime"), "runtime"),
    **dict.fromkeys(("Tool", "ToolContext", "ToolResult", "tool"), "tools"),
})
