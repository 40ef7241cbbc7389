"""What a person typed to add a routine, read into the request the service is sent.

`add_request` turns `aimon schedule add`, `/schedule add` or a `schedule_task` call into the
routine for `schedule/add`: the trigger is read here, in the person's time zone and at the
person's now.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from aimon_core.scheduling._routine import Routine, RoutineLimits, check_name, routine_to_json
from aimon_core.scheduling._trigger import Trigger, TriggerError, after, at, cron, every


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerChoice:
    """The trigger options a person gave: exactly one of them."""

    cron: str | None = None
    every: str | None = None
    at: str | None = None
    in_: str | None = None
    zone: str | None = None

    def trigger(self, now: float, local: str) -> Trigger:
        """Return the trigger chosen; raise TriggerError if not exactly one was given."""
        given = [name for name, value in (("--cron", self.cron), ("--every", self.every),
                                          ("--at", self.at), ("--in", self.in_))
                 if value is not None]
        if len(given) != 1:
            raise TriggerError(" ".join(given), "give one of --cron, --every, --at, --in")
        zone = self.zone or local
        if self.cron is not None:
            return cron(self.cron, zone)
        if self.every is not None:
            return every(self.every)
        if self.at is not None:
            return at(self.at, zone)
        assert self.in_ is not None
        return after(self.in_, now)


@dataclass(frozen=True, slots=True, kw_only=True)
class AddChoice:
    """What `schedule add` was given besides the trigger."""

    name: str
    prompt: str
    project: str
    trigger: TriggerChoice
    agent: str | None = None
    session: str | None = None
    limits: RoutineLimits = field(default_factory=RoutineLimits)
    skip_missed: bool = False


def add_request(choice: AddChoice, *, now: float | None = None, local: str | None = None
                ) -> dict[str, Any]:
    """Return the `schedule/add` params for `choice`; raise TriggerError or RoutineError."""
    from aimon_core.scheduling._trigger import local_zone

    now = time.time() if now is None else now
    prompt = choice.prompt.strip()
    if not prompt:
        raise TriggerError(choice.prompt, "a routine needs a prompt")
    routine = Routine(name=check_name(choice.name), prompt=prompt,
                      trigger=choice.trigger.trigger(now, local or local_zone()),
                      project=choice.project, agent=choice.agent, session=choice.session,
                      limits=choice.limits, skip_missed=choice.skip_missed)
    return {"routine": routine_to_json(routine)}
