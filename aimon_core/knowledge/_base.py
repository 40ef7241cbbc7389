"""A project's knowledge: which sources it indexes, reading them, and the wiki.

`aimon knowledge add PATH|URL...` records sources and indexes them; `aimon knowledge index`
reads every recorded source again (with none recorded: README files, `docs/` and the wiki).
The index and the list live in aimon's data folder, per project; the wiki
(`.aimon/wiki/*.md`, pages the model writes with Write and Edit, each change approved as any
edit) is read again before each search when a page changed.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from aimon_core.knowledge._store import Document, KnowledgeStore

TEXT_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".adoc", ".asciidoc", ".org",
                           ".html", ".htm"})
MAX_FILE = 1_000_000
MAX_FILES = 5_000
WIKI = Path(".aimon") / "wiki"
DEFAULT_SOURCES = ("README.md", "README.rst", "README.txt", "docs", str(WIKI))
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexReport:
    """What an indexing run did: sources read, passages stored, what was skipped and why."""

    documents: int = 0
    passages: int = 0
    skipped: tuple[str, ...] = ()


def _is_url(source: str) -> bool:
    return source.startswith(("http://", "https://"))


@dataclass(slots=True)
class KnowledgeBase:
    """One project's sources and their index."""

    project_root: Path
    store: KnowledgeStore
    sources_file: Path
    _wiki_seen: dict[str, int] = field(default_factory=dict)

    def recorded(self) -> tuple[str, ...]:
        """Return the sources added with `aimon knowledge add`, in order."""
        try:
            value = json.loads(self.sources_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return ()
        return tuple(str(v) for v in value) if isinstance(value, list) else ()

    def _record(self, sources: tuple[str, ...]) -> None:
        from aimon_core._atomic import private_dir, write_atomic

        private_dir(self.sources_file.parent)
        write_atomic(self.sources_file, json.dumps(list(sources), indent=1).encode())

    async def add(self, items: tuple[str, ...]) -> IndexReport:
        """Record `items` (paths or URLs) and index them."""
        kept = [item if _is_url(item) else self._name((self.project_root / item).resolve())
                for item in items]
        self._record(tuple(dict.fromkeys((*self.recorded(), *kept))))
        return await self._index(tuple(kept))

    async def index(self) -> IndexReport:
        """Read every source again; forget documents that are gone."""
        sources = self.recorded() or DEFAULT_SOURCES
        report = await self._index(sources)
        wanted = set(self._names(sources))
        for source in self.store.sources():
            if source not in wanted and not _is_url(source):
                self.store.remove(source)
        return report

    def _names(self, sources: tuple[str, ...]) -> Iterator[str]:
        for source in sources:
            if _is_url(source):
                yield source
            else:
                yield from (name for name, _ in self._files(source))

    async def _index(self, sources: tuple[str, ...]) -> IndexReport:
        documents = passages = 0
        skipped: list[str] = []
        for source in sources:
            if _is_url(source):
                text = await _fetch_text(source, skipped)
                found = [(source, text)] if text is not None else []
            else:
                found = await asyncio.to_thread(self._read_all, source, skipped)
            for name, text in found:
                passages += self.store.put(Document(source=name, text=text))
                documents += 1
        return IndexReport(documents=documents, passages=passages, skipped=tuple(skipped))

    def _read_all(self, source: str, skipped: list[str]) -> list[tuple[str, str]]:
        read = []
        for name, path in self._files(source):
            try:
                data = path.read_bytes()[:MAX_FILE]
            except OSError as exc:
                skipped.append(f"{name}: {exc.strerror or exc}")
                continue
            if b"\0" in data[:4096]:
                skipped.append(f"{name}: binary")
                continue
            text = data.decode("utf-8", errors="replace")
            if path.suffix.lower() in (".html", ".htm"):
                from aimon_core.web import to_markdown

                text = to_markdown(text)
            read.append((name, text))
        return read

    def _files(self, source: str) -> Iterator[tuple[str, Path]]:
        """Return (name, path) of the text files a source names; links are not followed."""
        root = self.project_root / source  # an absolute source stays itself
        if root.is_symlink() or not root.exists():
            return
        if root.is_file():
            yield self._name(root), root
            return
        count = 0
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
            for file_name in sorted(files):
                path = Path(folder, file_name)
                if path.suffix.lower() in TEXT_SUFFIXES and not path.is_symlink():
                    count += 1
                    if count > MAX_FILES:
                        return
                    yield self._name(path), path

    def _name(self, path: Path) -> str:
        return (os.path.relpath(path, self.project_root)
                if path.is_relative_to(self.project_root) else str(path))

    def refresh_wiki(self) -> None:
        """Index the wiki's pages that changed since the last look (cheap: stat only)."""
        for name, path in self._files(str(WIKI)):
            try:
                stamp = path.stat().st_mtime_ns
            except OSError:
                continue
            if self._wiki_seen.get(name) != stamp:
                self._wiki_seen[name] = stamp
                for found_name, text in self._read_all(name, []):
                    self.store.put(Document(source=found_name, text=text))


async def _fetch_text(url: str, skipped: list[str]) -> str | None:
    from aimon_core.web import FetchError, Page, fetch

    try:
        got = await fetch(url)
    except FetchError as exc:
        skipped.append(f"{url}: {exc}")
        return None
    if not isinstance(got, Page):
        skipped.append(f"{url}: redirected to {got.location} (add that URL instead)")
        return None
    return got.markdown


def project_knowledge(project_root: Path, data_dir: Path | None = None) -> KnowledgeBase:
    """Return the knowledge base of a project, its index in aimon's data folder (SQLite)."""
    from aimon_core.knowledge._store import SQLiteKnowledgeStore
    from aimon_core.session import project_key, user_data_dir

    root = project_root.resolve()
    folder = (data_dir or user_data_dir()) / "knowledge" / project_key(str(root))
    return KnowledgeBase(project_root=root, store=SQLiteKnowledgeStore(folder / "index.sqlite"),
                         sources_file=folder / "sources.json")
