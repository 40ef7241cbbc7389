"""Routines defined in a project's `.aimon/routines/*.md`, scheduled once the user trusts them.

    ---
    cron: "0 9 * * 1-5"        # or every: 30m, or at: 2026-12-02T09:00
    tz: Europe/Berlin
    agent: reviewer
    max-runs: 10
    max-cost: 0.50
    ---
    Review yesterday's commits and note anything that looks wrong.

The name is the file's stem (or `name:`); the body is the prompt. Other keys: `session`,
`max-tokens`, `runs-per-day`, `cost-per-day`, `tokens-per-day`, `pause-after`,
`skip-missed`. A routine runs a
prompt by itself, later, with the project's rules: like other code-running configuration it
is trusted for its content. Each file is one trust item (a digest of its path and text);
`aimon schedule load` asks before it schedules new or changed ones, and the engine pauses a
file's routine whose file changed or went away since (`vet_origin`). A file that is a link
leading out of the project is not read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aimon_core.scheduling._routine import Routine, RoutineLimits, amount, check_name, whole
from aimon_core.scheduling._trigger import Trigger, TriggerError, at, cron, every

ROUTINES_FOLDER = Path(".aimon") / "routines"
_KEYS = frozenset({"name", "cron", "every", "at", "tz", "agent", "session", "max-runs",
                   "max-cost", "max-tokens", "runs-per-day", "cost-per-day", "tokens-per-day",
                   "pause-after", "skip-missed"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutineFile:
    """A routine read from a file, and the digest it is trusted by."""

    path: Path
    routine: Routine
    item: str


def routine_item(path: Path, text: str) -> str:
    """Return the trust digest of a routine file: its path and its text."""
    from aimon_core.config import item_digest

    return item_digest("routine", str(path), text)


def read_routine_files(project_root: Path, *, local: str
                       ) -> tuple[list[RoutineFile], list[str]]:
    """Return the routines in the project's `.aimon/routines/*.md`, and what was skipped."""
    root = Path(project_root).resolve()
    folder = root / ROUTINES_FOLDER
    found: list[RoutineFile] = []
    problems: list[str] = []
    if not folder.is_dir():
        return found, problems
    real_root = os.path.realpath(root)
    for path in sorted(folder.glob("*.md")):
        real = os.path.realpath(path)
        if not real.startswith(real_root.rstrip(os.sep) + os.sep) or not Path(real).is_file():
            problems.append(f"{path}: not read (a link out of the project, or not a file)")
            continue
        try:
            text = path.read_text(encoding="utf-8")
            routine = parse_routine_file(path, text, project=str(root), local=local)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        item = routine_item(path, text)
        found.append(RoutineFile(path=path, routine=replace(routine, origin_item=item),
                                 item=item))
    return found, problems


def parse_routine_file(path: Path, text: str, *, project: str, local: str) -> Routine:
    """Return the routine a file defines; raise ValueError saying what is wrong."""
    from aimon_core.agent import load_frontmatter_yaml, split_frontmatter

    front, body = split_frontmatter(text)
    data = load_frontmatter_yaml(front) if front is not None else None
    if not isinstance(data, dict):
        raise ValueError("no frontmatter: it starts with --- and names a trigger")
    unknown = sorted(str(key) for key in data if key not in _KEYS)
    if unknown:
        raise ValueError(f"unknown keys: {', '.join(unknown)}")
    prompt = body.strip()
    if not prompt:
        raise ValueError("no prompt: the text after the frontmatter is the prompt")
    name = check_name(str(data.get("name") or path.stem))
    return Routine(
        name=name, trigger=_trigger(data, local), prompt=prompt, project=project,
        agent=_text(data, "agent"), session=_text(data, "session"),
        limits=RoutineLimits(
            max_runs=whole(data, "max-runs"), max_cost_usd=amount(data, "max-cost"),
            max_tokens=whole(data, "max-tokens"), runs_per_day=whole(data, "runs-per-day"),
            cost_per_day_usd=amount(data, "cost-per-day"),
            tokens_per_day=whole(data, "tokens-per-day"),
            pause_after_failures=whole(data, "pause-after") or 3),
        skip_missed=data.get("skip-missed") is True, origin=str(path))


def _trigger(data: dict[str, Any], local: str) -> Trigger:
    given = [key for key in ("cron", "every", "at") if data.get(key) is not None]
    if len(given) != 1:
        raise TriggerError(", ".join(given), "give one of cron, every, at")
    zone = _text(data, "tz") or local
    value = str(data[given[0]])
    if given[0] == "cron":
        return cron(value, zone)
    if given[0] == "every":
        return every(value)
    return at(value, zone)


def _text(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ValueError(f"{key} must be text")


def trusted_items(project_root: Path) -> frozenset[str]:
    """Return the digests the user trusted in the project."""
    from aimon_core.config import TrustStore

    return TrustStore().trusted_items(project_root)


def trust_files(project_root: Path, files: list[RoutineFile]) -> None:
    """Record that the user trusts these routine files as they read now."""
    from aimon_core.config import TrustStore

    store = TrustStore()
    store.trust(project_root, store.trusted_items(project_root) | {f.item for f in files})


def vet_origin(routine: Routine) -> str:
    """Return why a file's routine may not run now ("" if it may): its file changed or went
    away since it was scheduled, or its trust was revoked."""
    if not routine.origin:
        return ""
    path = Path(routine.origin)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return f"paused: its file {path} is gone (aimon schedule rm {routine.name})"
    item = routine_item(path, text)
    if item != routine.origin_item:
        return (f"paused: its file {path} changed since it was scheduled "
                f"(aimon schedule load --project {routine.project})")
    if item not in trusted_items(Path(routine.project)):
        return (f"paused: its file {path} is not trusted "
                f"(aimon schedule load --project {routine.project})")
    return ""
