"""HookRegistry: the hooks of an agent, and dispatching an event to those that match."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.hook._command import OUTPUT_LIMIT, hook_label, run_command_hook
from aimon_core.hook._config import (
    CommandHookSpec,
    check_matcher,
    condition_accepts,
    matcher_accepts,
)
from aimon_core.hook._lifecycle import HookEvent
from aimon_core.hook._result import HookResult, combine, redacted
from aimon_core.shell import SecretPairs

if TYPE_CHECKING:
    from aimon_core.hook._events import HookInput

log = logging.getLogger(__name__)

HookCallback = Callable[["HookInput"], Awaitable[HookResult | None]]
# Told a line for the user and its level: a hook's status message ("info"), or an async
# hook's failure ("warning").
HookNotice = Callable[[str, str], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class _CallbackHook:
    event: HookEvent
    callback: HookCallback
    matcher: str | None
    name: str


class HookRegistry:
    """Command hooks from settings and Python callbacks, run when their event happens.

    Command hooks (in settings order) come before callbacks (in registration order); that is
    the order their answers are combined in. All hooks of one dispatch run concurrently.
    """

    def __init__(
        self,
        commands: Iterable[CommandHookSpec] = (),
        *,
        project_dir: Path | None = None,
        output_limit: int = OUTPUT_LIMIT,
        kill_grace: float = 1.0,
        secrets: SecretPairs | None = None,
    ) -> None:
        """Create a registry holding `commands` (from settings) and no callbacks yet.

        Args:
            project_dir: where command hooks run (default: each input's cwd).
            kill_grace: seconds between SIGTERM and SIGKILL when a command hook is stopped.
            secrets: credentials redacted from every answer (default: aimon's environment's).
        """
        if secrets is None:
            import os

            from aimon_core.shell import secret_values

            secrets = secret_values(os.environ)
        self.secrets = secrets
        self.project_dir = project_dir
        self.output_limit = output_limit
        self.kill_grace = kill_grace
        self._commands: tuple[CommandHookSpec, ...] = tuple(commands)
        self._callbacks: list[_CallbackHook] = []
        # Async hooks still running; owned here, awaited by `drain` (session end).
        self._background: set[asyncio.Task[None]] = set()

    @property
    def commands(self) -> tuple[CommandHookSpec, ...]:
        """Return the command hooks, in settings order."""
        return self._commands

    def replace_commands(self, commands: Iterable[CommandHookSpec]) -> None:
        """Replace every command hook (settings were reloaded); callbacks stay."""
        self._commands = tuple(commands)

    def register(
        self,
        event: HookEvent,
        callback: HookCallback,
        *,
        matcher: str | None = None,
        name: str | None = None,
    ) -> None:
        """Run `callback` on `event` when `matcher` selects the event's subject.

        The callback returns a HookResult or None (no opinion); an exception it raises
        becomes a non-blocking error. Raises re.error for an invalid matcher regex.
        """
        check_matcher(matcher)
        label = name or getattr(callback, "__qualname__", None) or repr(callback)
        self._callbacks.append(
            _CallbackHook(event=event, callback=callback, matcher=matcher, name=label)
        )

    def _matching(
        self, hook_input: HookInput
    ) -> tuple[list[CommandHookSpec], list[_CallbackHook]]:
        subject = hook_input.match_subject()
        seen: set[str] = set()
        commands = []
        for spec in self._commands:
            # The same command configured twice (user and project settings) runs once.
            if (spec.event is hook_input.event and spec.command not in seen
                    and matcher_accepts(spec.matcher, subject)
                    and condition_accepts(spec.condition, hook_input.tool_name,
                                          hook_input.tool_input)):
                seen.add(spec.command)
                commands.append(spec)
        callbacks = [
            hook for hook in self._callbacks
            if hook.event is hook_input.event and matcher_accepts(hook.matcher, subject)
        ]
        return commands, callbacks

    def has_hooks(self, event: HookEvent, subject: str | None = None) -> bool:
        """Return True when some hook would run for `event` (and this tool name or source)."""
        return any(
            spec.event is event and matcher_accepts(spec.matcher, subject)
            for spec in self._commands
        ) or any(
            hook.event is event and matcher_accepts(hook.matcher, subject)
            for hook in self._callbacks
        )

    async def dispatch(self, event: HookEvent, hook_input: HookInput, *,
                       notice: HookNotice | None = None,
                       env: Mapping[str, str] | None = None) -> HookResult:
        """Run every hook that matches and return their combined answer.

        Async hooks start in the background and add nothing to the answer; `notice` hears
        status messages and their failures. `env` is added to command hooks' environment.
        Never raises for a broken hook (its failure is in `errors`); cancelling stops
        running command hooks (their process groups are killed).
        """
        if hook_input.event is not event:
            raise ValueError(
                f"hook input is for {hook_input.event.name}, not {event.name}"
            )
        commands, callbacks = self._matching(hook_input)
        for spec in commands:
            if spec.status_message and notice is not None:
                notice(spec.status_message, "info")
        for spec in (spec for spec in commands if spec.run_async):
            self._start_background(spec, hook_input, notice, env)
        runs = [self._run_command(spec, hook_input, env) for spec in commands
                if not spec.run_async]
        runs += [self._run_callback(hook, hook_input) for hook in callbacks]
        if not runs:
            return HookResult()
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(run) for run in runs]
        return redacted(combine(task.result() for task in tasks), self.secrets)

    def _start_background(self, spec: CommandHookSpec, hook_input: HookInput,
                          notice: HookNotice | None, env: Mapping[str, str] | None) -> None:
        async def run() -> None:
            result = redacted(await self._run_command(spec, hook_input, env), self.secrets)
            for error in result.errors:
                log.warning("async hook: %s", error)
                if notice is not None:
                    notice(f"hook error: {error}", "warning")

        task = asyncio.create_task(run(), name=f"async hook {hook_label(spec.command)}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    @property
    def running(self) -> int:
        """Return how many async hooks are still running."""
        return len(self._background)

    async def drain(self, within: float | None = None) -> None:
        """Wait for the async hooks still running; cancel those left after `within` s."""
        tasks = set(self._background)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=within)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def _run_command(self, spec: CommandHookSpec, hook_input: HookInput,
                           env: Mapping[str, str] | None = None) -> HookResult:
        try:
            return await run_command_hook(
                spec, hook_input, project_dir=self.project_dir,
                output_limit=self.output_limit, kill_grace=self.kill_grace, env=env,
            )
        except Exception as exc:  # a bug here must not break the turn
            log.exception("command hook %r failed", spec.command)
            label = hook_label(spec.command)
            return HookResult(errors=(f"hook {label!r} failed: {exc}",), source=label)

    async def _run_callback(self, hook: _CallbackHook, hook_input: HookInput) -> HookResult:
        try:
            result = await hook.callback(hook_input)
        except Exception as exc:
            log.exception("hook %r raised", hook.name)
            return HookResult(
                errors=(f"hook {hook.name!r} raised {type(exc).__name__}: {exc}",),
                source=hook.name,
            )
        if result is None:
            return HookResult(source=hook.name)
        if not isinstance(result, HookResult):
            return HookResult(
                errors=(f"hook {hook.name!r} returned {type(result).__name__}, "
                        "not a HookResult or None; its answer was ignored",),
                source=hook.name,
            )
        return dataclasses.replace(result, source=result.source or hook.name)

