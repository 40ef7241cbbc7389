"""Long pastes fold into placeholders in the prompt and are sent whole."""

from __future__ import annotations

from prompt_toolkit.history import InMemoryHistory

from aimon_cli._prompt import PASTE_FOLD_LINES, Pastes, PastingHistory


def lines(count: int, word: str = "line") -> str:
    return "\n".join(f"{word} {i}" for i in range(1, count + 1))


def test_short_pastes_go_in_as_they_are_long_ones_as_numbered_placeholders() -> None:
    pastes = Pastes()
    short = lines(PASTE_FOLD_LINES)
    assert pastes.fold(short) == short
    assert pastes.fold(lines(12).replace("\n", "\r\n")) == "[Pasted text +12 lines]"
    assert pastes.fold(lines(40, "row")) == "[Pasted text #2 +40 lines]"
    typed = "see [Pasted text +12 lines] and [Pasted text #2 +40 lines]!"
    assert pastes.expand(typed) == f"see {lines(12)} and {lines(40, 'row')}!"
    assert pastes.ending("see [Pasted text +12 lines]") == "[Pasted text +12 lines]"
    assert pastes.ending("see [Pasted text +12 lines") is None  # edited: sent as typed


def test_expanding_is_one_pass_and_taking_restarts_the_numbering() -> None:
    pastes = Pastes()
    tricky = lines(11) + "\n[Pasted text #2 +11 lines]"  # pasted text that looks like one
    first = pastes.fold(tricky)
    second = pastes.fold(lines(11, "row"))
    assert second == "[Pasted text #2 +11 lines]"
    assert pastes.take(f"{first} {second}") == f"{tricky} {lines(11, 'row')}"
    assert pastes.fold(lines(11)) == "[Pasted text +11 lines]"  # a new prompt: #1 again


def test_the_history_keeps_the_pasted_text() -> None:
    pastes, inner = Pastes(), InMemoryHistory()
    history = PastingHistory(inner, pastes)
    history.append_string("look at " + pastes.fold(lines(11)))
    assert history.get_strings() == ["look at " + lines(11)]
    assert list(inner.load_history_strings()) == ["look at " + lines(11)]
