"""Fork a session's conversation at a prompt: a new session holding the messages before it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aimon_core.checkpoint._journal import Checkpoint, CheckpointJournal
from aimon_core.checkpoint._tree import CheckpointError
from aimon_core.session import SessionTotals

if TYPE_CHECKING:
    from aimon_core.checkpoint._session import SessionCheckpoints
    from aimon_core.llm import Message
    from aimon_core.session import SessionRecord, SessionStore

_LOOKAHEAD = 4  # crash recovery may put answered tool calls before the prompt's message


def fork_point(messages: tuple[Message, ...], checkpoint: Checkpoint) -> int:
    """Return where the conversation of `checkpoint`'s prompt starts in `messages`.

    Raises CheckpointError when the prompt is not there (the conversation was compacted).
    """
    wanted = " ".join(checkpoint.prompt.split())
    for index in range(checkpoint.messages,
                       min(len(messages), checkpoint.messages + _LOOKAHEAD)):
        message = messages[index]
        if message.role == "user" and wanted in " ".join(message.text.split()):
            return index
    raise CheckpointError(
        f"the conversation no longer holds prompt {checkpoint.turn} (it was compacted "
        "since): only the code can be restored")


async def fork_conversation(store: SessionStore, record: SessionRecord,
                            checkpoints: SessionCheckpoints, checkpoint: Checkpoint) -> str:
    """Store a new session whose transcript ends before `checkpoint`'s prompt; return its id.

    The old session stays stored and resumable; the fork keeps its budget override, session
    approvals and the checkpoints of the earlier prompts.
    """
    cut = fork_point(record.transcript.messages, checkpoint)

    def work() -> str:
        claimed = store.claim(None, project_root=record.project_root,
                              agent_ref=record.agent_ref, holder="aimon rewind")
        try:
            new_id = claimed.record.id
            store.records.append(new_id, record.transcript.messages[:cut],
                                 lease=claimed.lease, sync=True)
            store.records.write_side(
                new_id, totals=SessionTotals(), budget_override=record.budget_override,
                compaction_failure_count=0, approvals=record.approvals,
                lease=claimed.lease, sync=True, model_choice=record.model_choice)
            earlier = [e for e in checkpoints.entries() if e.turn < checkpoint.turn]
            path = checkpoints.journal.path.with_name(f"{new_id}.jsonl")
            CheckpointJournal(path).write(earlier)
            return new_id
        finally:
            store.release(claimed)

    return await asyncio.to_thread(work)
