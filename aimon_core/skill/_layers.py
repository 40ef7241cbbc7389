"""Layered lookup by name: later layers win; an empty override switches a name off.

Shared by skills and subagent definitions. Loading a layer yields candidates; composing them
keeps, per name, the highest layer's candidate and remembers the paths it hides.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from aimon_core.skill._model import Layer, ListingEntry, LoadFailure

T = TypeVar("T")


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate(Generic[T]):
    """One definition found in one layer; `value` None marks a disabling override."""

    name: str
    description: str
    layer: Layer
    path: Path
    value: T | None
    warnings: tuple[str, ...] = ()


class LayeredRegistry(Generic[T]):
    """Definitions by name after layering, with the listing and the files that failed."""

    def __init__(self, candidates: Iterable[Candidate[T]],
                 failures: Iterable[LoadFailure] = ()) -> None:
        """Compose `candidates`, given lowest layer first; later ones win by name."""
        self._winners: dict[str, Candidate[T]] = {}
        self._shadows: dict[str, list[Path]] = {}
        self._notes: dict[str, list[str]] = {}
        for candidate in candidates:
            self._add(candidate)
        self.failures: tuple[LoadFailure, ...] = tuple(failures)

    @classmethod
    def of(cls, loaded: Iterable[Candidate[T] | LoadFailure]) -> LayeredRegistry[T]:
        """Compose what the layers loaded, lowest first; files that failed are kept aside."""
        candidates: list[Candidate[T]] = []
        failures: list[LoadFailure] = []
        for item in loaded:
            if isinstance(item, LoadFailure):
                failures.append(item)
            else:
                candidates.append(item)
        return cls(candidates, failures)

    def _add(self, candidate: Candidate[T]) -> None:
        name = candidate.name
        previous = self._winners.get(name)
        if previous is not None and previous.layer == candidate.layer:
            self._notes.setdefault(name, []).append(
                f"{candidate.path}: {name!r} is also defined by {previous.path} in the same "
                f"layer ({candidate.layer}); that one is used")
            return
        if previous is None and candidate.value is None:
            self._notes.setdefault(name, []).append(
                f"{candidate.path}: the body is empty, which disables {name!r}, but no lower "
                "layer defines it")
        if previous is not None:
            self._shadows.setdefault(name, []).append(previous.path)
        self._winners[name] = candidate

    def get(self, name: str) -> T | None:
        """Return the definition named `name`; None when absent or disabled."""
        candidate = self._winners.get(name)
        return None if candidate is None else candidate.value

    def values(self) -> tuple[T, ...]:
        """Return every enabled definition, by name."""
        return tuple(c.value for _, c in sorted(self._winners.items()) if c.value is not None)

    def names(self) -> tuple[str, ...]:
        """Return the names of the enabled definitions, sorted."""
        return tuple(n for n, c in sorted(self._winners.items()) if c.value is not None)

    def listing(self) -> tuple[ListingEntry, ...]:
        """Return one entry per name: the winning definition, its layer, path and warnings."""
        entries = []
        for name, candidate in sorted(self._winners.items()):
            entries.append(ListingEntry(
                name=name,
                description=candidate.description,
                layer=candidate.layer,
                path=candidate.path,
                warnings=candidate.warnings + tuple(self._notes.get(name, ())),
                disabled=candidate.value is None,
                shadows=tuple(self._shadows.get(name, ())),
            ))
        return tuple(entries)


def layer_folders(project_root: Path, user_dir: Path | None, name: str
                  ) -> tuple[tuple[Path, Layer, Path | None], ...]:
    """Return the user's and the project's `name` folders, lowest layer first.

    Each comes with the project its files must stay inside (None for the user's own).
    """
    folders: list[tuple[Path, Layer, Path | None]] = []
    if user_dir is not None:
        folders.append((user_dir, Layer.USER, None))
    for base, layer in ((".claude", Layer.CLAUDE_PROJECT), (".aimon", Layer.PROJECT)):
        folders.append((project_root / base / name, layer, project_root))
    return tuple(folders)


def list_folder(root: Path, layer: Layer, inside: Path | None
                ) -> list[os.DirEntry[str]] | LoadFailure:
    """Return a definitions folder's entries by name ([] when there is no such folder).

    A folder that cannot be listed, or that leads out of `inside` (the project) by a link, is
    a LoadFailure naming it.
    """
    from aimon_core.filesystem import own_path

    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
        if inside is not None:
            own_path(root, inside=inside)
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        return LoadFailure(path=root, layer=layer, message=f"cannot list the folder ({exc})")
    return entries


def disabling_name(text: str, *, default: str) -> str | None:
    """Return the name an empty-bodied definition file switches off; None for a real one.

    The name is the frontmatter's `name`, else `default` (the folder or file name).
    """
    from aimon_core.agent import (
        NoFrontmatterError,
        read_frontmatter,
        split_frontmatter,
        usable_name,
    )

    front, body = split_frontmatter(text)
    if body.strip() or (front is None and text.strip()):
        return None
    try:
        written = read_frontmatter(text).fields.get("name")
    except NoFrontmatterError:
        written = None
    text_name = written.strip() if isinstance(written, str) and written.strip() else None
    return usable_name(text_name, default)[0] or default
