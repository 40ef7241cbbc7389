"""The REPL's status footer: one line under the live output, above the prompt.

Model, permission mode, context used (share of the window), the session's cost, background
tasks: redrawn with the prompt (every spinner tick while a turn runs), so it is always current.
`"footer": false` in a settings file hides it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prompt_toolkit.formatted_text import StyleAndTextTuples

if TYPE_CHECKING:
    from aimon_core.live import LiveSession, LiveSessionStatus
    from aimon_core.runtime import AgentAssembly


def footer_text(status: LiveSessionStatus, mode: str | None, background: int,
                running_cost: float = 0.0) -> str:
    """Return the footer's line: model · mode · context · cost · background tasks.

    `running_cost`: what the running turn has spent so far, not in the totals until it ends.
    """
    from aimon_core.command import format_cost

    parts = [status.model]
    if mode:
        parts.append(f"{mode} mode")
    if status.context_window > 0:
        share = min(status.context_tokens / status.context_window, 9.99)
        parts.append(f"context {share:.0%}")
    running = running_cost if status.running_turn is not None else 0.0
    parts.append(format_cost(status.totals.cost_usd + running))
    if background:
        parts.append(f"{background} background task{'s' * (background != 1)}")
    return " · ".join(parts)


def footer_line(text: str, columns: int) -> StyleAndTextTuples:
    """Return the footer as prompt text (one row, cut to fit)."""
    from aimon_cli._terminal import fit

    return [("class:activity", fit(text, columns) + "\n")]


def status_footer(live: LiveSession | None, assembly: AgentAssembly | None, app: Any
                  ) -> StyleAndTextTuples:
    """Return the footer for the prompt; nothing before the session opens, once the prompt
    is sent (nothing live stays in the scrollback), or when the settings hide it."""
    if live is None or app is None or app.is_done:
        return []
    if assembly is not None and not assembly.settings.settings.observe.footer:
        return []
    background = assembly.running_tasks() if assembly is not None else 0
    running = assembly.turn_cost(live.id) if assembly is not None else 0.0
    text = footer_text(live.status(), live.runtime.permission_mode(), background, running)
    return footer_line(text, app.output.get_size().columns)
