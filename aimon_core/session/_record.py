"""The persistent session aggregate and the small immutable values it is made of."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from aimon_core.llm import Message, ToolResultBlock, Usage
from aimon_core.session._ids import SessionId, new_session_id

TITLE_LENGTH = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionTotals:
    """Totals of the completed turns of one session."""

    turns: int = 0
    iterations: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def usage(self) -> Usage:
        """Return the token counts as a Usage."""
        return Usage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
        )

    def add_turn(self, *, iterations: int, usage: Usage, cost_usd: float) -> SessionTotals:
        """Return these totals with one more completed turn counted."""
        return SessionTotals(
            turns=self.turns + 1,
            iterations=self.iterations + iterations,
            input_tokens=self.input_tokens + usage.input_tokens,
            output_tokens=self.output_tokens + usage.output_tokens,
            cache_read_tokens=self.cache_read_tokens + usage.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + usage.cache_write_tokens,
            cost_usd=self.cost_usd + cost_usd,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetOverride:
    """Per-session limits set by the user; None keeps the agent's default."""

    max_iterations: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """The model chosen in a session with `/model`, and the provider it was chosen on (a
    session resumed on another provider keeps that provider's default)."""

    model: str
    provider: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionTranscript:
    """The messages of a session, oldest first."""

    messages: tuple[Message, ...] = ()

    def __len__(self) -> int:
        return len(self.messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def appended(self, messages: Iterable[Message]) -> SessionTranscript:
        """Return this transcript with `messages` added at the end."""
        return SessionTranscript(messages=(*self.messages, *messages))


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSnapshot:
    """The state of a session at a turn boundary: what a turn reads and what it leaves."""

    transcript: SessionTranscript = SessionTranscript()
    totals: SessionTotals = SessionTotals()
    budget_override: BudgetOverride | None = None
    model_choice: ModelChoice | None = None
    compaction_failure_count: int = 0
    approvals: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """The persistent session: identity, agent binding, transcript and side state.

    `load_warnings` lists stored lines the loader had to skip; it is never persisted.
    """

    id: SessionId
    project_root: str
    agent_ref: str
    created_at: datetime
    updated_at: datetime
    title: str = ""
    transcript: SessionTranscript = SessionTranscript()
    totals: SessionTotals = SessionTotals()
    budget_override: BudgetOverride | None = None
    model_choice: ModelChoice | None = None
    compaction_failure_count: int = 0
    approvals: tuple[str, ...] = ()
    # Tool calls recorded as started that have no result in the transcript: after a crash
    # they may have run (see `repair_tool_pairs`).
    started_tool_ids: tuple[str, ...] = ()
    # The files the session's tools have seen, as (path, sha256 of the content seen): Edit
    # after resume works on a file read before, unless it changed since.
    reads: tuple[tuple[str, str], ...] = ()
    load_warnings: tuple[str, ...] = ()

    @classmethod
    def new(
        cls,
        *,
        project_root: str,
        agent_ref: str,
        session_id: SessionId | None = None,
        now: datetime | None = None,
    ) -> SessionRecord:
        """Make the record of a session that has no messages yet."""
        when = now or datetime.now(UTC)
        return cls(
            id=session_id or new_session_id(when),
            project_root=project_root,
            agent_ref=agent_ref,
            created_at=when,
            updated_at=when,
        )

    @property
    def snapshot(self) -> SessionSnapshot:
        """Return the turn-boundary state of this record."""
        return SessionSnapshot(
            transcript=self.transcript,
            totals=self.totals,
            budget_override=self.budget_override,
            model_choice=self.model_choice,
            compaction_failure_count=self.compaction_failure_count,
            approvals=self.approvals,
        )

    def with_snapshot(self, snapshot: SessionSnapshot) -> SessionRecord:
        """Return this record holding `snapshot`'s state (title kept, or taken from it)."""
        return dataclasses.replace(
            self,
            title=self.title or title_from(snapshot.transcript.messages),
            transcript=snapshot.transcript,
            totals=snapshot.totals,
            budget_override=snapshot.budget_override,
            model_choice=snapshot.model_choice,
            compaction_failure_count=snapshot.compaction_failure_count,
            approvals=snapshot.approvals,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionSummary:
    """One line of a session listing."""

    id: SessionId
    title: str
    created_at: datetime
    updated_at: datetime
    message_count: int
    project_root: str
    agent_ref: str


def unanswered_tool_ids(started: Iterable[str], messages: Iterable[Message]) -> tuple[str, ...]:
    """Return the ids of `started` that no tool result in `messages` answers."""
    pending = dict.fromkeys(started)
    if not pending:
        return ()
    for message in messages:
        for block in message.content:
            if isinstance(block, ToolResultBlock):
                pending.pop(block.tool_use_id, None)
    return tuple(pending)


def title_from(messages: Iterable[Message]) -> str:
    """Return the first user text, whitespace collapsed and cut to 80 characters ("" if none).

    Only a message's first text part counts: what aimon adds after it (context blocks, hook
    context) is not what the user typed.
    """
    for message in messages:
        if message.role != "user":
            continue
        text = " ".join(message.first_text.split())
        if text:
            return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1] + "…"
    return ""


def summarize(record: SessionRecord) -> SessionSummary:
    """Return the listing line of `record`."""
    return SessionSummary(
        id=record.id,
        title=record.title,
        created_at=record.created_at,
        updated_at=record.updated_at,
        message_count=len(record.transcript),
        project_root=record.project_root,
        agent_ref=record.agent_ref,
    )
