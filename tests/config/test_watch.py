"""Hot reload of settings files with a real file watcher."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from aimon_core.config import LoadedSettings, SettingsError, TrustStore, watch_settings
from aimon_core.config._watch import watch_plan
from aimon_core.session import user_config_dir

from .conftest import Writer

Result = LoadedSettings | SettingsError
TIMEOUT = 10


class Recorder:
    """Collects callback results and lets a test wait for the next one."""

    def __init__(self) -> None:
        self.results: list[Result] = []
        self._changed = asyncio.Event()

    def __call__(self, result: Result) -> None:
        self.results.append(result)
        self._changed.set()

    async def next(self, count: int) -> Result:
        """Wait until `count` results arrived; return the last one."""
        while len(self.results) < count:
            self._changed.clear()
            await asyncio.wait_for(self._changed.wait(), TIMEOUT)
        return self.results[-1]

    async def until(self, accept: Callable[[Result], bool]) -> Result:
        """Wait until the latest result is accepted (several edits may arrive one by one)."""
        while not (self.results and accept(self.results[-1])):
            await self.next(len(self.results) + 1)
        return self.results[-1]


@asynccontextmanager
async def watching(project: Path, store: TrustStore, **kwargs: object
                   ) -> AsyncIterator[Recorder]:
    recorder = Recorder()
    stop, ready = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(watch_settings(
        project, recorder, trust_store=store, stop_event=stop, ready=ready, debounce_ms=50,
        **kwargs,  # type: ignore[arg-type]
    ))
    try:
        await asyncio.wait_for(ready.wait(), TIMEOUT)
        yield recorder
    finally:
        stop.set()
        await asyncio.wait_for(task, TIMEOUT)


def run(main: Callable[[], object]) -> None:
    asyncio.run(main())  # type: ignore[arg-type]


def test_edits_are_reloaded_and_broken_edits_reported(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", {"model": "a"})

    async def main() -> None:
        async with watching(project, trust_store) as recorder:
            write("project", {"model": "b"})
            result = await recorder.next(1)
            assert isinstance(result, LoadedSettings)
            assert result.settings.model == "b"

            path = write("project", '{"model": "c",,}')
            broken = await recorder.next(2)
            assert isinstance(broken, SettingsError)
            assert (broken.path, broken.line) == (path, 1)

            write("local", {"permissions": {"deny": ["Bash(rm:*)"]}})
            write("project", {"model": "c"})
            fixed = await recorder.until(
                lambda r: isinstance(r, LoadedSettings) and r.settings.model == "c"
                and r.settings.permissions.deny != ()
            )
            assert isinstance(fixed, LoadedSettings)
            assert fixed.settings.permissions.deny == ("Bash(rm:*)",)

    run(main)


def test_user_settings_and_flags_are_part_of_the_reload(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    async def main() -> None:
        async with watching(project, trust_store, flags={"provider": "openai"}) as recorder:
            write("user", {"model": "u"})
            result = await recorder.next(1)
            assert isinstance(result, LoadedSettings)
            assert (result.settings.model, result.settings.provider) == ("u", "openai")

    run(main)


def test_unrelated_files_do_not_fire(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    (project / ".aimon").mkdir()

    async def main() -> None:
        async with watching(project, trust_store) as recorder:
            (project / ".aimon" / "notes.txt").write_text("x", encoding="utf-8")
            (project / "settings.json").write_text("{broken", encoding="utf-8")
            (project / ".aimon" / "agents").mkdir()
            (project / ".aimon" / "agents" / "settings.json").write_text("{", encoding="utf-8")
            write("project", {"model": "b"})
            result = await recorder.next(1)
            (project / ".aimon" / "notes.txt").write_text("y", encoding="utf-8")
            write("project", {"model": "c"})
            await recorder.next(2)
        models = [r.settings.model for r in recorder.results if isinstance(r, LoadedSettings)]
        assert len(models) == len(recorder.results)
        assert models[-1] == "c"
        assert isinstance(result, LoadedSettings)

    run(main)


def test_filter_accepts_only_settings_files(project: Path) -> None:
    plan = watch_plan(project)
    real = project.resolve()
    user = user_config_dir().resolve()
    accepted = {
        real / ".aimon" / "settings.json",
        real / ".aimon" / "settings.local.json",
        user / "settings.json",
        real / ".aimon",
    }
    rejected = {
        real / "settings.json",
        real / ".aimon" / "settings.json~",
        real / ".aimon" / "agents" / "settings.json",
        user / "settings.local.json",
        user / "trusted-folders.json",
    }
    assert all(plan.accepts(None, str(path)) for path in accepted)
    assert not any(plan.accepts(None, str(path)) for path in rejected)
    # Neither folder exists yet: watch the project root and the nearest ancestor of the user's.
    assert real in plan.folders
    assert not any(folder.name == ".aimon" for folder in plan.folders)


def test_settings_folder_created_after_the_watch_started(
    project: Path, trust_store: TrustStore
) -> None:
    async def main() -> None:
        async with watching(project, trust_store) as recorder:
            (project / ".aimon").mkdir()
            (project / ".aimon" / "settings.json").write_text(
                json.dumps({"model": "late"}), encoding="utf-8"
            )
            await recorder.until(
                lambda r: isinstance(r, LoadedSettings) and r.settings.model == "late"
            )

            (project / ".aimon" / "settings.json").write_text(
                json.dumps({"model": "later"}), encoding="utf-8"
            )
            result = await recorder.next(len(recorder.results) + 1)
            assert isinstance(result, LoadedSettings)
            assert result.settings.model == "later"

    run(main)


def test_untrusted_edit_reports_a_pending_trust(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", {"model": "a"})

    async def main() -> None:
        async with watching(project, trust_store) as recorder:
            write("project", {"permissions": {"allow": ["Bash(make:*)"]}})
            result = await recorder.next(1)
            assert isinstance(result, LoadedSettings)
            assert result.settings.permissions.allow == ()
            assert result.pending_trust is not None
            assert result.pending_trust.what == ("allows Bash(make:*)",)

    run(main)


def test_a_failing_callback_does_not_stop_the_watch(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", {"model": "a"})

    async def main() -> None:
        seen: list[Result] = []
        first, second = asyncio.Event(), asyncio.Event()

        def callback(result: Result) -> None:
            seen.append(result)
            if len(seen) == 1:
                first.set()
                raise RuntimeError("boom")
            second.set()

        stop, ready = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(watch_settings(
            project, callback, trust_store=trust_store, stop_event=stop, ready=ready,
            debounce_ms=50,
        ))
        await asyncio.wait_for(ready.wait(), TIMEOUT)
        write("project", {"model": "b"})
        await asyncio.wait_for(first.wait(), TIMEOUT)
        write("project", {"model": "c"})
        await asyncio.wait_for(second.wait(), TIMEOUT)
        stop.set()
        await asyncio.wait_for(task, TIMEOUT)

    run(main)


def test_cancelling_the_watch_ends_it(project: Path, trust_store: TrustStore) -> None:
    async def main() -> None:
        ready = asyncio.Event()
        task = asyncio.create_task(watch_settings(
            project, Recorder(), trust_store=trust_store, ready=ready
        ))
        await asyncio.wait_for(ready.wait(), TIMEOUT)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=TIMEOUT)
        assert done == {task}
        assert task.cancelled()

    run(main)
