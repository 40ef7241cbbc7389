"""Memory you review: the model proposes, the user accepts, accepted memory is in the prompt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from aimon_core.agent import ApprovalAnswer, ApprovalRequested
from aimon_core.command import memory_action, memory_shorthand
from aimon_core.live import LiveSessionEvent
from aimon_core.llm import LLMRequest, TextBlock, reply, script
from aimon_core.memory import (
    FileObservationStore,
    MemoryBook,
    MemoryOwner,
    MemoryScope,
    MemorySource,
    MemoryStatus,
    owner_for,
)
from aimon_core.runtime import RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore


def context_text(request: LLMRequest) -> str:
    first = request.messages[0]
    return "".join(b.text for b in first.content[1:] if isinstance(b, TextBlock))


def run_session(project: Path, store: FileObservationStore, *steps: object,
                prompt: str = "go") -> list[LLMRequest]:
    client = script(*steps)  # type: ignore[arg-type]

    async def main() -> None:
        parts = RuntimeParts(client=client, memory=store)
        async with build_runtime(project, parts=parts) as assembly:
            live = await assembly.open_session(
                SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore()))

            def on_event(event: LiveSessionEvent) -> None:
                if isinstance(event, ApprovalRequested):
                    live.answer(event.request.id, ApprovalAnswer(allowed=True))

            live.subscribe(on_event, answers=True)
            async with live:
                await live.submit(prompt)

    asyncio.run(main())
    return list(client.requests)


def test_a_model_proposal_is_used_only_once_accepted(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    store = FileObservationStore(tmp_path / "memory")
    fact = "The integration tests need the fake clock from conftest."
    run_session(project, store, reply("", ("Remember", {"text": fact})), reply("noted"))
    book = MemoryBook(store, owner_for(project, "default"))
    [proposal] = book.inbox()
    assert proposal.text == fact and proposal.source is MemorySource.MODEL
    # The next session: proposed, not accepted: not in the prompt.
    [request] = run_session(project, store, reply("hello"))
    assert fact not in context_text(request) and fact not in request.system
    assert memory_action(book, f"accept {proposal.id}").is_error is False
    [request] = run_session(project, store, reply("hello"))
    assert '<context name="memory">' in context_text(request) and fact in context_text(request)


def test_hash_text_at_the_prompt_adds_a_note(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    store = FileObservationStore(tmp_path / "memory")
    assert run_session(project, store, prompt="# always run ruff before committing") == []
    book = MemoryBook(store, owner_for(project, "default"))
    [note] = book.accepted()
    assert note.text == "always run ruff before committing" and note.source is MemorySource.USER
    [request] = run_session(project, store, reply("ok"))
    assert "always run ruff" in context_text(request)


@pytest.mark.parametrize(("prompt", "note"), [
    ("# use tabs", "use tabs"), ("## Heading", None), ("#", None), ("#tag", None),
    ("# two\nlines", None), ("fix # this", None)])
def test_what_counts_as_a_note(prompt: str, note: str | None) -> None:
    assert memory_shorthand(prompt) == note


def test_scopes_are_kept_apart_by_owner(tmp_path: Path) -> None:
    store = FileObservationStore(tmp_path)
    me = MemoryOwner(principal="me", project="p1", agent="default")
    other_project = MemoryOwner(principal="me", project="p2", agent="default")
    someone = MemoryOwner(principal="you", project="p1", agent="default")
    for scope in MemoryScope:
        store.add(me, f"{scope.value} note", scope=scope, status=MemoryStatus.ACCEPTED,
                  source=MemorySource.USER)
    assert {o.text for o in store.list(other_project)} == {"user note", "agent note"}
    assert store.list(someone) == ()
    for bad in ("../x", "..", ".hidden", "", "a/b"):
        with pytest.raises(ValueError, match="bad principal"):
            MemoryOwner(principal=bad, project="p", agent="a")
    assert owner_for(Path("/p"), "..", principal="..").principal == "-."
    assert owner_for(Path("/p"), "..").agent == "-."
    text = store.path(me, MemoryScope.PROJECT).read_text()
    assert "- [accepted] project note <!-- id=" in text  # readable, diffable


def test_list_accept_edit_forget(tmp_path: Path) -> None:
    book = MemoryBook(FileObservationStore(tmp_path), MemoryOwner(
        principal="me", project="p", agent="a"))
    proposal = book.propose("the API is versioned", MemoryScope.PROJECT, MemorySource.MODEL)
    shown = memory_action(book, "").text
    assert "Proposed, waiting" in shown and proposal.id in shown
    assert memory_action(book, "accept nope").is_error
    assert not memory_action(book, "accept all").is_error and book.inbox() == ()
    memory_action(book, f"edit {proposal.id} the API is versioned (v2)")
    assert book.accepted()[0].text == "the API is versioned (v2)"
    added = memory_action(book, "add --user prefer short answers")
    assert "(user," in added.text
    assert [o.text for o in book.search("versioned api", 5)] == ["the API is versioned (v2)"]
    assert not memory_action(book, f"forget {proposal.id}").is_error
    assert [o.text for o in book.accepted()] == ["prefer short answers"]


def test_memory_that_does_not_fit_is_left_to_search(tmp_path: Path) -> None:
    book = MemoryBook(FileObservationStore(tmp_path), MemoryOwner(
        principal="me", project="p", agent="a"))
    for n in range(30):
        book.remember(f"note number {n} about the parser and its {n} quirks")
    text = book.prompt_text(cap=300)
    assert text is not None and "note number 29" in text and "note number 0 " not in text
    assert "more remembered; find them with MemorySearch" in text
    assert json.dumps(text)  # plain text
