"""Routines: prompts that run by themselves, on a schedule, within limits (the seeds'
scheduling domain).

A `Routine` runs on a trigger (`Cron`, `Every`, `Once`) in a project, with an agent; each
run is an execution of its own, recorded as a session. The `SchedulingEngine` lives in an
application scope (the service, `aimon serve`): it claims each due occurrence in the
`RoutineStore` (so engines sharing a store run it once), guards the runs (no overlap,
quotas per routine and in all, backoff and a pause after failures, a kill switch) and logs
each in the `RunLog`. `SessionRoutineRunner` carries a run out with print mode's
permissions: what would ask is refused.
"""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr

if TYPE_CHECKING:
    from aimon_core.scheduling._command import ScheduleCall, register_schedule
    from aimon_core.scheduling._engine import (
        EngineOptions,
        RoutineRunner,
        RunListener,
        SchedulingEngine,
        SchedulingLimits,
        limits_from_settings,
    )
    from aimon_core.scheduling._files import (
        read_routine_files,
        trust_files,
        trusted_items,
        vet_origin,
    )
    from aimon_core.scheduling._notify import Notifier
    from aimon_core.scheduling._postgres import PostgresRoutineStore, PostgresRunLog
    from aimon_core.scheduling._report import (
        list_lines,
        local_time,
        routine_report,
        runs_lines,
    )
    from aimon_core.scheduling._request import AddChoice, TriggerChoice, add_request
    from aimon_core.scheduling._routine import (
        Routine,
        RoutineError,
        RoutineLimits,
        RoutineRun,
        RoutineState,
        RunOutcome,
        UnknownRoutineError,
        check_name,
        routine_from_json,
        routine_to_json,
        run_from_json,
        run_to_json,
        trigger_from_json,
        trigger_to_json,
    )
    from aimon_core.scheduling._runner import SessionRoutineRunner
    from aimon_core.scheduling._store import (
        MemoryRoutineStore,
        MemoryRunLog,
        RoutineStore,
        RunLog,
        SQLiteRoutineStore,
        SQLiteRunLog,
    )
    from aimon_core.scheduling._tools import schedule_tools
    from aimon_core.scheduling._trigger import (
        Cron,
        Every,
        Once,
        Trigger,
        TriggerError,
        after,
        at,
        catch_up,
        cron,
        describe,
        every,
        format_duration,
        local_zone,
        next_time,
        parse_duration,
    )

# Names load on first use: the command line's `aimon schedule` reads triggers without the
# engine, and the engine loads no runtime until a routine runs.
_LAZY = {
    **dict.fromkeys(("EngineOptions", "RoutineRunner", "RunListener", "SchedulingEngine",
                     "SchedulingLimits", "limits_from_settings"), "_engine"),
    **dict.fromkeys(("Routine", "RoutineError", "RoutineLimits", "RoutineRun", "RoutineState",
                     "RunOutcome", "UnknownRoutineError", "check_name", "routine_from_json",
                     "routine_to_json", "run_from_json", "run_to_json", "trigger_from_json",
                     "trigger_to_json"), "_routine"),
    "SessionRoutineRunner": "_runner",
    **dict.fromkeys(("ScheduleCall", "register_schedule"), "_command"),
    **dict.fromkeys(("AddChoice", "TriggerChoice", "add_request"), "_request"),
    "Notifier": "_notify",
    **dict.fromkeys(("read_routine_files", "trust_files", "trusted_items", "vet_origin"),
                    "_files"),
    **dict.fromkeys(("PostgresRoutineStore", "PostgresRunLog"), "_postgres"),
    **dict.fromkeys(("list_lines", "local_time", "routine_report", "runs_lines"), "_report"),
    "schedule_tools": "_tools",
    **dict.fromkeys(("MemoryRoutineStore", "MemoryRunLog", "RoutineStore", "RunLog",
                     "SQLiteRoutineStore", "SQLiteRunLog"), "_store"),
    **dict.fromkeys(("Cron", "Every", "Once", "Trigger", "TriggerError", "after", "at",
                     "catch_up", "cron", "describe", "every", "format_duration", "local_zone",
                     "next_time", "parse_duration"), "_trigger"),
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "AddChoice",
    "Cron",
    "EngineOptions",
    "Every",
    "MemoryRoutineStore",
    "MemoryRunLog",
    "Notifier",
    "Once",
    "PostgresRoutineStore",
    "PostgresRunLog",
    "Routine",
    "RoutineError",
    "RoutineLimits",
    "RoutineRun",
    "RoutineRunner",
    "RoutineState",
    "RoutineStore",
    "RunListener",
    "RunLog",
    "RunOutcome",
    "SQLiteRoutineStore",
    "SQLiteRunLog",
    "ScheduleCall",
    "SchedulingEngine",
    "SchedulingLimits",
    "SessionRoutineRunner",
    "Trigger",
    "TriggerChoice",
    "TriggerError",
    "UnknownRoutineError",
    "add_request",
    "after",
    "at",
    "catch_up",
    "check_name",
    "cron",
    "describe",
    "every",
    "format_duration",
    "limits_from_settings",
    "list_lines",
    "local_time",
    "local_zone",
    "next_time",
    "parse_duration",
    "read_routine_files",
    "register_schedule",
    "routine_from_json",
    "routine_report",
    "routine_to_json",
    "run_from_json",
    "run_to_json",
    "runs_lines",
    "schedule_tools",
    "trigger_from_json",
    "trigger_to_json",
    "trust_files",
    "trusted_items",
    "vet_origin",
]
