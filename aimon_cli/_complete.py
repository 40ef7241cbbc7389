"""Completion at the prompt: `/commands`, a command's argument, and `@files` (fuzzy).

`/mo` offers the commands; `/model so` the values the command declares for its argument
(`SlashCommand.choices`: models, sessions, modes, skills, agents); `@calc` the project's
files and folders that match as a subsequence (`@rcl` finds `src/calc.py`), ignored files
left out as `.gitignore` says. Runs in a thread (`ThreadedCompleter`): listing the files or
the stored sessions may take a moment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

if TYPE_CHECKING:
    from aimon_core.command import CommandRegistry
    from aimon_core.live import LiveSession

FILES_SHOWN = 30
MAX_FILES = 50_000
_FRESH_SECONDS = 5.0
_SKIPPED = frozenset({".git", "node_modules", ".venv", "__pycache__"})


def fuzzy_score(query: str, candidate: str) -> int | None:
    """Return how well `query` matches `candidate` as a subsequence (higher is better), or
    None. Letters in a row, at a word's start and in the file's own name count more."""
    if not query:
        return 0
    lowered, wanted = candidate.lower(), query.lower()
    name_start = lowered.rstrip("/").rfind("/") + 1
    # From the start, and from the file's own name (`calc` in `src/calc.py` is the name's,
    # not the `c` of `src` followed by the rest).
    best = _matched(lowered, wanted, 0, name_start)
    if best is None:
        return None  # (nothing matches from the name if nothing does from the start)
    if name_start:
        best = max(best, _matched(lowered, wanted, name_start, name_start) or 0)
    return best * 100 - len(candidate)


def _matched(lowered: str, wanted: str, position: int, name_start: int) -> int | None:
    score, previous = 0, -2
    for char in wanted:
        found = lowered.find(char, position)
        if found < 0:
            return None
        score += 1
        if found == previous + 1:
            score += 5
        if found == 0 or lowered[found - 1] in "/._- ":
            score += 3
        if found >= name_start:
            score += 2
        previous, position = found, found + 1
    return score


class ProjectFiles:
    """The project's files and folders, listed as ripgrep lists them (.gitignore honoured),
    again when the last listing is older than a few seconds."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._paths: list[str] = []
        self._at = 0.0

    def paths(self) -> list[str]:
        """Return the files and folders (folders end with `/`), relative to the root."""
        if time.monotonic() - self._at > _FRESH_SECONDS:
            files = self._listed()
            folders = {str(Path(f).parent) + "/" for f in files if "/" in f}
            nested = {p for folder in folders for p in _parents(folder)}
            self._paths, self._at = sorted({*files, *folders, *nested}), time.monotonic()
        return self._paths

    def _listed(self) -> list[str]:
        rg = _ripgrep()
        if rg is not None:
            try:
                done = subprocess.run(
                    [rg, "--files", "--hidden", "--no-require-git", "--no-config",
                     "--glob", "!.git"], cwd=self.root, capture_output=True, timeout=5,
                    check=False)
                return done.stdout.decode("utf-8", "replace").splitlines()[:MAX_FILES]
            except (OSError, subprocess.TimeoutExpired):
                pass
        listed = _git_listed(self.root)  # no ripgrep: git knows what .gitignore leaves out
        if listed is not None:
            return listed
        found: list[str] = []
        for folder, dirs, names in os.walk(self.root):
            dirs[:] = [d for d in dirs if d not in _SKIPPED]
            base = os.path.relpath(folder, self.root)
            found += [name if base == "." else f"{base}/{name}" for name in names]
            if len(found) > MAX_FILES:
                break
        return found[:MAX_FILES]


def _ripgrep() -> str | None:
    """Return `rg`: the one installed next to this Python (the ripgrep wheel), else PATH's."""
    beside = Path(sys.executable).with_name("rg.exe" if os.name == "nt" else "rg")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which("rg")


def _git_listed(root: Path) -> list[str] | None:
    """Return the files git tracks or would (not ignored) under `root`; None outside a
    repository or without git."""
    try:
        done = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard",
                               "-z"], cwd=root, capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [name for name in done.stdout.decode("utf-8", "replace").split("\0") if name
            ][:MAX_FILES]


def _parents(folder: str) -> Iterable[str]:
    parts = folder.rstrip("/").split("/")
    return ("/".join(parts[:n]) + "/" for n in range(1, len(parts)))


class PromptCompleter(Completer):
    """Completes commands, their first argument, and `@` file mentions."""

    def __init__(self, registry: CommandRegistry, root: Path,
                 live: Callable[[], LiveSession | None] = lambda: None) -> None:
        self.registry = registry
        self.files = ProjectFiles(root)
        self._live = live

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        """Yield what fits the word before the cursor."""
        text = document.text_before_cursor
        if text.startswith("/") and not any(c.isspace() for c in text):
            yield from self._commands(text)
            return
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            yield from self._files(word)
        elif text.startswith("/") and text.count(" ") == 1:  # `/name ARG`, the first argument
            yield from self._argument(text)

    def _commands(self, text: str) -> Iterable[Completion]:
        typed = text[1:].lower()
        for name in self.registry.names():
            command = self.registry.get(name)
            if name.startswith(typed) and command is not None:
                yield Completion("/" + name, start_position=-len(text),
                                 display_meta=command.description)

    def _argument(self, text: str) -> Iterable[Completion]:
        name, _, typed = text[1:].partition(" ")
        command = self.registry.get(name)
        if command is None or command.choices is None:
            return
        try:
            choices = command.choices(self._live())
        except Exception:  # a listing that fails offers nothing; typing still works
            return
        ranked = sorted(((fuzzy_score(typed, value), value, what) for value, what in choices),
                        key=lambda found: -(found[0] or 0))
        for score, value, what in ranked:
            if score is not None:
                yield Completion(value, start_position=-len(typed), display_meta=what)

    def _files(self, word: str) -> Iterable[Completion]:
        typed = word[1:]
        scored = ((fuzzy_score(typed, path), path) for path in self.files.paths())
        best = sorted(((s, p) for s, p in scored if s is not None), key=lambda f: -f[0])
        for _, path in best[:FILES_SHOWN]:
            yield Completion("@" + path.replace(" ", "\\ "), start_position=-len(word),
                             display=path)
