"""Routines from `.aimon/routines/*.md`: read, refused when wrong, trusted for their content."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.scheduling import (
    Cron,
    EngineOptions,
    Every,
    MemoryRoutineStore,
    MemoryRunLog,
    RoutineState,
    SchedulingEngine,
)
from aimon_core.scheduling._files import (
    parse_routine_file,
    read_routine_files,
    trust_files,
    vet_origin,
)

GOOD = """---
cron: "0 9 * * 1-5"
tz: Europe/Berlin
agent: reviewer
max-runs: 10
max-cost: 0.5
skip-missed: true
---
Review yesterday's commits.
"""


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "project" / ".aimon" / "routines"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return tmp_path / "project"


def test_a_file_defines_a_routine(tmp_path: Path) -> None:
    project = _project(tmp_path, {"nightly.md": GOOD, "notes.txt": "ignored"})
    [found], problems = read_routine_files(project, local="UTC")
    assert problems == []
    routine = found.routine
    assert routine.name == "nightly" and routine.prompt == "Review yesterday's commits."
    assert routine.trigger == Cron(expression="0 9 * * 1-5", zone="Europe/Berlin")
    assert routine.agent == "reviewer" and routine.skip_missed
    assert routine.limits.max_runs == 10 and routine.limits.max_cost_usd == 0.5
    assert routine.project == str(project.resolve())
    assert routine.origin == str(found.path) and routine.origin_item == found.item


@pytest.mark.parametrize(("text", "says"), [
    ("no frontmatter", "no frontmatter"),
    ("---\nevery: 1h\n---\n", "no prompt"),
    ("---\nevery: 1h\ncron: '* * * * *'\n---\np", "give one of"),
    ("---\nprompt: x\n---\np", "unknown keys: prompt"),
    ("---\nevery: 1h\nmax-runs: -1\n---\np", "max-runs"),
    ("---\nevery: 1h\nname: ../x\n---\np", "a routine's name"),
    ("---\nat: soon\n---\np", "ISO 8601"),
])
def test_bad_files_are_refused(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_routine_file(tmp_path / "x.md", text, project=str(tmp_path), local="UTC")


def test_a_link_out_of_the_project_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text(GOOD)
    project = _project(tmp_path, {})
    (project / ".aimon" / "routines" / "evil.md").symlink_to(outside)
    found, problems = read_routine_files(project, local="UTC")
    assert found == [] and "a link out of the project" in problems[0]


def test_a_file_routine_runs_only_as_its_trusted_file_reads(tmp_path: Path) -> None:
    project = _project(tmp_path, {"check.md": "---\nevery: 1h\n---\ncheck the build\n"})
    [found], _ = read_routine_files(project, local="UTC")
    assert "not trusted" in vet_origin(found.routine)
    trust_files(project, [found])
    assert vet_origin(found.routine) == ""
    found.path.write_text("---\nevery: 1h\n---\nrm -rf everything\n")
    assert "changed since it was scheduled" in vet_origin(found.routine)
    found.path.unlink()
    assert "is gone" in vet_origin(found.routine)


def test_the_engine_pauses_a_routine_its_vet_refuses(tmp_path: Path) -> None:
    project = _project(tmp_path, {"check.md": "---\nevery: 1h\n---\ncheck the build\n"})
    [found], _ = read_routine_files(project, local="UTC")
    trust_files(project, [found])
    clock = [1_000_000.0]
    ran: list[str] = []

    async def runner(routine: object, run: object, on_session: object) -> object:
        ran.append("run")
        raise AssertionError("a changed file's routine must not run")

    async def main() -> SchedulingEngine:
        engine = SchedulingEngine(MemoryRoutineStore(), MemoryRunLog(), runner,  # type: ignore[arg-type]
                                  options=EngineOptions(clock=lambda: clock[0], vet=vet_origin))
        await engine.add(found.routine)
        found.path.write_text("---\nevery: 1h\n---\nsomething else\n")
        clock[0] += 3600
        assert await engine.tick() == ()
        return engine

    engine = asyncio.run(main())
    [routine] = engine.routines.all()
    assert routine.state is RoutineState.PAUSED and "changed" in routine.note
    assert routine.trigger == Every(seconds=3600) and ran == []
