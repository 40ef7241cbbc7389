"""/undo, /rewind and /diff: take the project (and the conversation) back to a checkpoint."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aimon_core.command._format import format_ago, plural
from aimon_core.command._registry import (
    CANCELLED,
    CommandError,
    CommandHost,
    CommandOutcome,
    SlashCommand,
)

if TYPE_CHECKING:
    from aimon_core.checkpoint import Checkpoint, FileChange, RestorePlan, SessionCheckpoints
    from aimon_core.live import LiveSession

REWIND_USAGE = "/rewind [N] [code|conversation|both]"
_WHAT = (("c", "code"), ("v", "conversation"), ("b", "both"), ("n", "cancel"))
_SHOWN = 9  # the picker offers the last nine prompts, one key each
_OFF = ("Checkpoints are off in this folder (aimon does not snapshot a home folder or a file "
        "system root).")


def short(text: str, width: int = 60) -> str:
    """Return `text` on one line, cut to `width` characters."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def change_counts(changes: tuple[FileChange, ...]) -> str:
    """Return e.g. `1 added, 2 changed, 1 deleted (+40 -12)`, or `no changes`."""
    from aimon_core.checkpoint import ChangeKind

    if not changes:
        return "no changes"
    parts = [f"{n} {kind.value}" for kind in ChangeKind
             if (n := sum(c.kind == kind for c in changes))]
    lines = (f" (+{sum(c.added for c in changes)} -{sum(c.removed for c in changes)})")
    return ", ".join(parts) + lines


async def _checkpoints(host: CommandHost) -> tuple[LiveSession, SessionCheckpoints]:
    live = await host.live_session()
    if live.checkpoints is None:
        raise CommandError(_OFF)
    if live.turn_running():  # its files may change under a restore
        raise CommandError("a turn is running: let it finish or interrupt it (Esc), then retry.")
    return live, live.checkpoints


async def _restore_code(host: CommandHost, checkpoints: SessionCheckpoints,
                        checkpoint: Checkpoint, verb: str, note: str = "") -> tuple[bool, str]:
    """Show the diff, ask (after `note`), restore; return (restored, what to tell the user)."""
    from aimon_core.checkpoint import CheckpointError

    plan = await checkpoints.plan(checkpoint)
    label = f"prompt {checkpoint.turn} ({short(checkpoint.prompt, 40)!r})"
    if not plan.changes:
        return False, f"Nothing to {verb}: the files are as they were before {label}."
    question = (f"{note}{verb.capitalize()}: put {plural(len(plan.changes), 'file')} back as "
                f"before {label}?")
    if plan.outside:
        question += f" This overwrites changes made outside aimon: {', '.join(plan.outside)}."
    if not await host.confirm(question, f"{plan.summary}\n\n{plan.diff}"):
        return False, "Nothing restored."
    try:
        report = await checkpoints.apply(plan)
    except CheckpointError as exc:
        raise CommandError(str(exc)) from None
    kept = (f"\nLeft alone (they hold files checkpoints do not cover): {', '.join(report.kept)}"
            if report.kept else "")
    return True, f"Restored the files as they were before {label}:\n{_summary(plan)}{kept}"


def _summary(plan: RestorePlan) -> str:
    return "\n".join(f"  {c.describe()}" for c in plan.changes)


def _changed_files(checkpoint: Checkpoint) -> bool:
    """Tell whether the prompt changed files (unknown, for one still running: yes)."""
    return checkpoint.after is None or checkpoint.after != checkpoint.before


async def _undo(args: str, host: CommandHost) -> CommandOutcome:
    if args:
        raise CommandError("/undo takes no arguments (use /rewind N for an earlier prompt).")
    _, checkpoints = await _checkpoints(host)
    target = checkpoints.undo_target()
    if target is None:
        return CommandOutcome.message("Nothing to undo: no prompt has a checkpoint yet.")
    # Step past the prompts that changed nothing, to the last one that changed files.
    passed: list[int] = []
    while target is not None and not _changed_files(target):
        passed.append(target.turn)
        earlier = [c for c in checkpoints.history() if c.turn < target.turn]
        target = earlier[-1] if earlier else None
    if target is None:
        return CommandOutcome.message("Nothing to undo: no prompt of this session changed "
                                      "files.")
    note = ""
    if passed:
        which = ", ".join(str(turn) for turn in reversed(passed))
        note = (f"{'Prompt' if len(passed) == 1 else 'Prompts'} {which} changed no files, so "
                f"this undoes prompt {target.turn}. ")
    _, text = await _restore_code(host, checkpoints, target, "undo", note)
    return CommandOutcome.message(text)


async def _diff(args: str, host: CommandHost) -> CommandOutcome:
    if args:
        raise CommandError("/diff takes no arguments.")
    _, checkpoints = await _checkpoints(host)
    if not checkpoints.history():
        return CommandOutcome.message("No checkpoint yet: /diff shows what the session changed "
                                      "once a prompt has run.")
    changes, diff = await checkpoints.session_diff()
    if not changes:
        return CommandOutcome.message("No changes to the project since the session's first "
                                      "prompt.")
    listing = "\n".join(f"  {c.describe()}" for c in changes)
    return CommandOutcome.message(
        f"Changed since the session's first prompt: {change_counts(changes)}\n{listing}\n\n"
        f"{diff}".rstrip())


async def rewind_rows(checkpoints: SessionCheckpoints,
                      history: tuple[Checkpoint, ...]) -> list[str]:
    """Return a row per prompt: its text, when, and what changed in the files since."""
    current = await checkpoints.now()
    rows = []
    for checkpoint in history:
        changes = await checkpoints.changes_since(checkpoint, current)
        rows.append(f"{short(checkpoint.prompt, 50)!r} ({format_ago(checkpoint.at)}) · "
                    f"since then: {change_counts(changes)}")
    return rows


async def rewind_listing(checkpoints: SessionCheckpoints) -> str:
    """Return the session's prompts, numbered, with what changed in the files since each."""
    history = checkpoints.history()
    rows = await rewind_rows(checkpoints, history)
    return "\n".join(f"  {c.turn:>3}. {row}" for c, row in zip(history, rows, strict=True))


async def _rewind(args: str, host: CommandHost) -> CommandOutcome:
    live, checkpoints = await _checkpoints(host)
    history = checkpoints.history()
    if not history:
        return CommandOutcome.message("Nothing to rewind: no prompt has a checkpoint yet.")
    words = args.split()
    if len(words) > 2:
        raise CommandError(f"expected a prompt number and what to restore, not {args!r}.")
    turn = _turn(words[0]) if words else await _pick(host, checkpoints, history)
    if isinstance(turn, str):  # cancelled
        return CommandOutcome()
    if turn is None:
        listing = await rewind_listing(checkpoints)
        return CommandOutcome.message(f"The session's prompts:\n{listing}\n\n"
                                      f"Go back with {REWIND_USAGE}")
    checkpoint = checkpoints.find(turn)
    if checkpoint is None:
        raise CommandError(f"no prompt {turn} in this session: see /rewind.")
    what = words[1].lower() if len(words) > 1 else await host.choose(
        f"Rewind to prompt {turn} ({short(checkpoint.prompt, 40)!r}): restore what?", _WHAT, "")
    if what == CANCELLED:
        return CommandOutcome()
    if what is None:
        raise CommandError("say what to restore: code, conversation or both.")
    what = {"c": "code", "v": "conversation", "b": "both", "n": "cancel"}.get(what, what)
    if what not in ("code", "conversation", "both", "cancel"):
        raise CommandError(f"restore code, conversation or both, not {what!r}.")
    if what == "cancel":
        return CommandOutcome.message("Nothing restored.")
    text = ""
    if what in ("code", "both"):
        restored, text = await _restore_code(host, checkpoints, checkpoint, "rewind")
        if what == "both" and not restored and text == "Nothing restored.":
            return CommandOutcome.message(text)
    if what in ("conversation", "both"):
        text = (text + "\n" if text else "") + await _fork(host, live, checkpoints, checkpoint)
    return CommandOutcome.message(text)


def _turn(word: str) -> int:
    if not word.isdigit() or int(word) < 1:
        raise CommandError(f"name a prompt by its number (see /rewind), not {word!r}.")
    return int(word)


async def _pick(host: CommandHost, checkpoints: SessionCheckpoints,
                history: tuple[Checkpoint, ...]) -> int | str | None:
    """Return the prompt number chosen, CANCELLED, or None (nobody to ask)."""
    shown = history[-_SHOWN:]
    rows = await rewind_rows(checkpoints, shown)
    options = tuple((str(i), f"prompt {c.turn}: {row}")
                    for i, (c, row) in enumerate(zip(shown, rows, strict=True), 1))
    key = await host.choose("Rewind to which prompt?", options, "")
    if key is None or key == CANCELLED:
        return key
    return shown[int(key) - 1].turn


async def _fork(host: CommandHost, live: LiveSession, checkpoints: SessionCheckpoints,
                checkpoint: Checkpoint) -> str:
    from aimon_core.checkpoint import CheckpointError, fork_conversation

    try:
        new_id = await fork_conversation(live.store, live.record, checkpoints, checkpoint)
    except CheckpointError as exc:
        raise CommandError(str(exc)) from None
    kept = f"The conversation before prompt {checkpoint.turn} continues in session {new_id}"
    old = live.id
    try:
        await host.resume(new_id)
    except CommandError:
        return f"{kept}: resume it with `aimon --resume {new_id}`. Session {old} is kept."
    return (f"{kept} (switched to it). Session {old} is kept: /resume {old}.\n"
            f"Prompt {checkpoint.turn} was: {checkpoint.prompt}")


def checkpoint_commands() -> tuple[SlashCommand, ...]:
    """Return /undo, /rewind and /diff."""
    return (
        SlashCommand(name="undo", description="Put back the files the last prompt changed",
                     run=_undo),
        SlashCommand(name="rewind", description="Go back to an earlier prompt: code, "
                     "conversation or both (also Esc Esc)", run=_rewind, usage=REWIND_USAGE),
        SlashCommand(name="diff", description="Show what this session changed in the files",
                     run=_diff),
    )
