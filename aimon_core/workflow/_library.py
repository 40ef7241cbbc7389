"""The workflows a project can run: `.aimon/workflows/NAME.yaml`, and the user's own.

Layers, lowest first: the user's `workflows/` folder (under aimon's config folder), then the
project's `.aimon/workflows/`; a project's workflow of the same name wins. Files are read as
aimon reads any file by itself: a project's file must not lead out of the project, special
files are never read, and the path deny rules apply. A file that cannot be read or used is a
failure that names it; the others load.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aimon_core.workflow._model import Pipeline
from aimon_core.workflow._parse import WorkflowDefinitionError, parse_pipeline

_LIMIT = 512 * 1024
_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowEntry:
    """A loaded workflow: its definition, where it came from, what it hides."""

    pipeline: Pipeline
    layer: str
    path: Path
    shadows: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowFailure:
    """A workflow file that could not be used, and why."""

    path: Path
    layer: str
    message: str


class WorkflowLibrary:
    """The workflows of a project by name, and the files that failed to load."""

    def __init__(self, entries: tuple[WorkflowEntry, ...] = (),
                 failures: tuple[WorkflowFailure, ...] = ()) -> None:
        self._entries = {entry.pipeline.name: entry for entry in entries}
        self.failures = failures

    def names(self) -> tuple[str, ...]:
        """Return the names of the workflows, sorted."""
        return tuple(sorted(self._entries))

    def get(self, name: str) -> Pipeline | None:
        """Return the workflow called `name`, if any."""
        entry = self._entries.get(name.strip())
        return entry.pipeline if entry is not None else None

    def entries(self) -> tuple[WorkflowEntry, ...]:
        """Return every workflow with its layer and file, by name."""
        return tuple(self._entries[name] for name in self.names())


def workflow_folders(project_root: Path, user_dir: Path | None) -> list[tuple[Path, str,
                                                                              Path | None]]:
    """Return (folder, layer, the project it must stay inside) for each layer, lowest first."""
    folders: list[tuple[Path, str, Path | None]] = []
    if user_dir is not None:
        folders.append((user_dir / "workflows", "user", None))
    folders.append((project_root / ".aimon" / "workflows", "project", project_root))
    return folders


def load_workflows(project_root: Path, *, user_dir: Path | None = None,
                   readable: Callable[[Path], bool] | None = None,
                   with_user: bool = True) -> WorkflowLibrary:
    """Load every layer's workflows for `project_root` (blocking: it reads files).

    `user_dir`: aimon's user config folder (default: the usual one; AIMON_HOME moves it).
    `readable`: the path deny rules; a file they cover is not read.
    """
    if user_dir is None and with_user:
        from aimon_core.session import user_config_dir

        user_dir = user_config_dir()
    found: dict[str, WorkflowEntry] = {}
    failures: list[WorkflowFailure] = []
    for folder, layer, inside in workflow_folders(project_root, user_dir):
        for path in _files(folder):
            try:
                pipeline = _read(path, inside, readable)
            except (OSError, UnicodeDecodeError, WorkflowDefinitionError) as exc:
                failures.append(WorkflowFailure(path=path, layer=layer, message=str(exc)))
                continue
            below = found.get(pipeline.name)
            shadows = (*below.shadows, below.path) if below is not None else ()
            found[pipeline.name] = WorkflowEntry(pipeline=pipeline, layer=layer, path=path,
                                                 shadows=shadows)
    return WorkflowLibrary(tuple(found.values()), tuple(failures))


def _files(folder: Path) -> list[Path]:
    try:
        names = sorted(entry.name for entry in folder.iterdir())
    except OSError:
        return []
    return [folder / name for name in names
            if not name.startswith(".") and name.endswith(_SUFFIXES)]


def _read(path: Path, inside: Path | None, readable: Callable[[Path], bool] | None
          ) -> Pipeline:
    from aimon_core.filesystem import read_own

    text = read_own(path, inside=inside, readable=readable, limit=_LIMIT).decode("utf-8")
    stem = path.name.rsplit(".", 1)[0]
    return parse_pipeline(text, source=str(path), default_name=stem)
