"""/artifacts: the files this session's tool calls created or changed."""

from __future__ import annotations

from aimon_core.command._registry import CommandHost, CommandOutcome, SlashCommand


async def _artifacts(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.tools import collect_artifacts

    live = await host.live_session()
    root = live.tool_context.project_root
    found = collect_artifacts(live.record.transcript.messages, live.runtime.tools,
                              live.tool_context.cwd)
    if not found:
        return CommandOutcome.message("No files created or changed by this session's tools.")
    rows = []
    for artifact in found:
        shown = artifact.to_json(root)
        rows.append(f"  {shown['path']}  {artifact.size:,} bytes  sha256 {artifact.sha256[:12]}"
                    f"  ({artifact.tool_name} {artifact.tool_use_id})")
    return CommandOutcome.message("\n".join(
        ["Files this session created or changed (first written first):", *rows]))


def artifact_commands() -> tuple[SlashCommand, ...]:
    """Return /artifacts."""
    return (SlashCommand(name="artifacts",
                         description="List the files this session's tools created or changed",
                         run=_artifacts),)
