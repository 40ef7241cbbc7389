"""aimon as an Agent Client Protocol agent (`aimon acp`), for editors: Zed, JetBrains, Neovim.

The ACP SDK (`agent-client-protocol`) is imported in this package only, and only when it is
used: importing `aimon_core.acp` loads nothing.
"""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr

if TYPE_CHECKING:
    from aimon_core.acp._agent import AimonAgent, run_acp

__getattr__ = lazy_getattr(__name__, {"AimonAgent": "_agent", "run_acp": "_agent"})

__all__ = ["AimonAgent", "run_acp"]
