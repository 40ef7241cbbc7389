"""Skills and subagents in use: loaded once per runtime, offered as tools and slash commands.

`load_extension_registries` reads every layer (built-in < bundled < user < .claude < .aimon)
once, when the runtime is built. `Extensions` then answers the Skill and Task tools, the
skill-backed slash commands (`/review src/app.py`) and `/skills`, `/agents`, `/task`, and owns
the background tasks. It is given what forks borrow (a `ForkBase`) when it is made; the
session a fork works for comes with each call's Turn.
"""

from __future__ import annotations

import asyncio
import getpass
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.agent import Turn, new_execution_id
from aimon_core.runtime._background import BackgroundTask, BackgroundTasks
from aimon_core.runtime._fork import ForkBase, ForkRequest, fork_answer, run_fork
from aimon_core.tools import ToolContext, ToolInput, ToolResult, subject_name, tool_list_notes

if TYPE_CHECKING:
    from aimon_core.agent import AgentDefinition, ExecutionResult
    from aimon_core.command import CommandHost, CommandOutcome, CommandRun, SlashCommand
    from aimon_core.skill import LoadFailure, RenderContext, Skill, SkillRegistry
    from aimon_core.subagent import AgentRegistry

log = logging.getLogger(__name__)


class InvokeError(Exception):
    """A skill or subagent cannot be started; the message says why and what to do."""


def load_extension_registries(project_root: Path, *,
                              readable: Callable[[Path], bool] | None = None
                              ) -> tuple[SkillRegistry, AgentRegistry]:
    """Load the skills and subagents of every layer for `project_root` (blocking).

    `readable` is the path deny rules: a definition they cover is not read.
    """
    from aimon_core.skill import default_roots, load_skills, materialize_bundle
    from aimon_core.subagent import default_agent_roots, load_agents

    try:
        bundled: Path | None = materialize_bundle(project_root)
    except OSError as exc:  # a read-only checkout: the built-ins are read from the package
        log.info("built-in skills not copied to the project: %s", exc)
        bundled = None
    return (load_skills(default_roots(project_root, bundled_dir=bundled, readable=readable)),
            load_agents(default_agent_roots(project_root, readable)))


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return "user"


class Extensions:
    """The skills and subagents of one runtime, what starts them, and its background tasks.

    Args:
        forks: what forks borrow from the runtime (client, policy, hooks); None: skills and
            subagents are listed, but a fork cannot run (it says so).
        runtime_id: the runtime's id, as a skill body may name it.
        tool_names: the runtime's tool names; listings name the tools a skill or a subagent
            asks for that the runtime does not have.
    """

    def __init__(self, *, project_root: Path, skills: SkillRegistry, agents: AgentRegistry,
                 forks: ForkBase | None = None, runtime_id: str = "",
                 tool_names: frozenset[str] = frozenset()) -> None:
        self.project_root = project_root
        self.skills = skills
        self.agents = agents
        self.forks = forks
        self.runtime_id = runtime_id
        self.tool_names = tool_names
        self.tasks = BackgroundTasks()

    # -- what is loaded

    def model_skills(self) -> tuple[Skill, ...]:
        """Return the skills the model may start with the Skill tool."""
        return tuple(s for s in self.skills.values() if s.invoke.model)

    def builtin_skills(self) -> tuple[str, ...]:
        """Return the names of the skills that come with aimon (a project's command wins)."""
        from aimon_core.skill import Layer

        return tuple(e.name for e in self.skills.listing()
                     if e.layer in (Layer.BUILTIN, Layer.BUNDLED))

    def notices(self) -> list[str]:
        """Return a line for each skill or agent file that could not be loaded."""
        return [f"{failure.path}: skipped ({failure.message})"
                for failure in (*self.skills.failures, *self.agents.failures)]

    def skills_listing(self) -> str:
        """Return the skills the model may start, one a line (`- name: description`).

        The Skill tool's description carries it, so a skill added while a session runs is
        offered from the next model call on (`reload`).
        """
        return "\n".join(f"- {s.name}: {_one_line(s.description)}" for s in self.model_skills())

    def agents_listing(self) -> str:
        """Return the subagents, one a line, for the Task tool's description."""
        return "\n".join(f"- {a.name}: {_one_line(a.description)}" for a in self.agents.values())

    def reload(self, skills: SkillRegistry, agents: AgentRegistry) -> None:
        """Use the skills and subagents as their files now say (one was added or edited)."""
        self.skills, self.agents = skills, agents

    def render_context(self, *, session_id: str | None, execution_id: str | None = None
                       ) -> RenderContext:
        """Return the render context of a skill started in a session or in an execution."""
        from aimon_core.skill import RenderContext

        if not session_id:
            session_id, execution_id = None, execution_id or new_execution_id()
        return RenderContext(agent_runtime_id=self.runtime_id, user=_user(),
                             session_id=session_id,
                             execution_id=None if session_id else execution_id)

    # -- starting skills and subagents

    def skill_named(self, name: str, *, by_model: bool) -> Skill:
        """Return the enabled skill `name` that the model (or the user) may start."""
        skill = self.skills.get(subject_name(name))
        if skill is None:
            for failure in _failures_named(self.skills.failures, subject_name(name)):
                raise InvokeError(f"Skill {subject_name(name)!r} did not load: {failure.path}: "
                                  f"{failure.message}. Fix the file and run it again (it is "
                                  "read again when saved); /skills lists what loaded.")
            names = ", ".join(self.skills.names()) or "none"
            raise InvokeError(f"No skill named {name!r}. Available skills: {names}.")
        if by_model and not skill.invoke.model:
            raise InvokeError(f"Skill {skill.name!r} can only be started by the user "
                              f"(/{skill.name}); do the work without it.")
        if not by_model and not skill.invoke.user:
            raise InvokeError(f"Skill {skill.name!r} is started by the model only, not by "
                              "a slash command.")
        return skill

    def agent_named(self, name: str) -> AgentDefinition:
        """Return the enabled subagent `name`; InvokeError naming the others if none."""
        agent = self.agents.get(subject_name(name))
        if agent is None:
            for failure in _failures_named(self.agents.failures, subject_name(name)):
                raise InvokeError(f"Subagent {subject_name(name)!r} did not load: "
                                  f"{failure.path}: {failure.message}. Fix the file; /agents "
                                  "lists what loaded.")
            names = ", ".join(self.agents.names()) or "none"
            raise InvokeError(f"Unknown subagent {name!r}. Available subagents: {names}.")
        return agent

    def fork_request(self, skill: Skill, body: str) -> ForkRequest:
        """Return the fork a `execution.mode: fork` skill runs: its agent, tools and goal."""
        from aimon_core.skill import ToolIntersectionError, intersect_tools

        if skill.execution.agent is None:
            raise InvokeError(f"Skill {skill.name!r} declares execution.mode fork without "
                              "execution.agent: name the subagent it runs as in its "
                              f"SKILL.md ({skill.path}).")
        try:
            agent = self.agent_named(skill.execution.agent)
        except InvokeError as exc:
            raise InvokeError(f"Skill {skill.name!r} forks into an unknown subagent "
                              f"{skill.execution.agent!r}: {exc}") from None
        try:
            tools = intersect_tools(skill.allowed_tools, agent.tools)
        except ToolIntersectionError as exc:
            raise InvokeError(f"Skill {skill.name!r} cannot fork into {agent.name!r}: {exc}."
                              ) from None
        return ForkRequest(agent=agent, goal=body, tools=tools or agent.tools,
                           max_iterations=skill.max_iterations, label=f"skill {skill.name}",
                           skill=skill)

    def forked(self, skill: Skill, args: str) -> ForkRequest:
        """Return the fork of a forked skill, its body rendered for the fork's execution."""
        execution_id = new_execution_id()
        body = _render(skill, args, self.render_context(session_id=None,
                                                        execution_id=execution_id))
        return replace(self.fork_request(skill, body), execution_id=execution_id)

    async def fork(self, request: ForkRequest, turn: Turn, context: ToolContext
                   ) -> ExecutionResult:
        """Run a fork for `turn`'s session, on what this runtime lends its forks."""
        if self.forks is None:
            raise InvokeError(f"{request.label} declares a fork, but no runtime is configured "
                              "to run it here (forks need a runtime built by build_runtime).")
        return await run_fork(self.forks, request, turn, context)

    async def skill_tool(self, name: str, args: str, ctx: ToolContext) -> ToolResult:
        """Run the Skill tool: an inline skill's instructions, or a forked skill's answer."""
        turn = ctx.turn or Turn()
        try:
            skill = self.skill_named(name, by_model=True)
            if skill.execution.mode != "fork":
                body = _render(skill, args, self.render_context(session_id=turn.session_id))
                return ToolResult.ok(
                    f'Skill "{skill.name}" is active (base directory {skill.directory}). '
                    f"Follow these instructions:\n\n{body}", skill=skill.name, forked=False)
            request = self.forked(skill, args)
            result = await self.fork(request, turn, ctx)
        except InvokeError as exc:
            return ToolResult.error(str(exc))
        answer = fork_answer(result, request.agent.name)
        return ToolResult.ok(
            f"=== Skill Forked ===\nskill: {skill.name}\nagent: {request.agent.name}\n"
            f"execution: {request.execution_id}\nstop: {result.stop.value}\n\n"
            f"{answer.rstrip()}\n=== End Skill Forked ===",
            skill=skill.name, forked=True, execution_id=request.execution_id)

    async def task_tool(self, inp: ToolInput, ctx: ToolContext) -> ToolResult:
        """Run the Task tool: a subagent now, or in the background."""
        try:
            agent = self.agent_named(inp.string("subagent_type"))
        except InvokeError as exc:
            return ToolResult.error(str(exc))
        description = inp.string("description")
        request = ForkRequest(agent=agent, goal=inp.string("prompt"),
                              execution_id=new_execution_id(), label=f"task {description!r}")
        turn = ctx.turn or Turn()
        try:
            if inp.boolean("run_in_background"):
                task = asyncio.get_running_loop().create_task(self.fork(request, turn, ctx))
                entry = self.tasks.add(agent.name, description, task)
                return ToolResult.ok(
                    f"Started {entry.id} (subagent {agent.name}) in the background. Read its "
                    f"answer with AgentOutput(task_id={entry.id!r}).", task_id=entry.id)
            result = await self.fork(request, turn, ctx)
        except InvokeError as exc:
            return ToolResult.error(str(exc))
        return ToolResult.ok(fork_answer(result, agent.name), agent=agent.name,
                             stop=result.stop.value, execution_id=request.execution_id)

    async def task_list_tool(self, inp: ToolInput, ctx: ToolContext) -> ToolResult:
        """Run the TaskList tool."""
        entries = self.tasks.all()
        if not entries:
            return ToolResult.ok("No background tasks.")
        now = time.monotonic()
        lines = [f"{e.id}  {e.state:<9}  {e.agent}  {e.description}  "
                 f"({max(0.0, now - e.started):.0f}s)" for e in entries]
        return ToolResult.ok("\n".join(lines))

    async def task_stop_tool(self, inp: ToolInput, ctx: ToolContext) -> ToolResult:
        """Run the TaskStop tool."""
        entry = self.tasks.get(inp.string("task_id"))
        if entry is None:
            return ToolResult.error(f"No task {inp.string('task_id')!r}; see TaskList.")
        if entry.task.done():
            return ToolResult.ok(f"{entry.id} had already ended ({entry.state}).")
        entry.task.cancel()
        await asyncio.wait([entry.task])
        return ToolResult.ok(f"Stopped {entry.id} (subagent {entry.agent}).")

    async def agent_output_tool(self, inp: ToolInput, ctx: ToolContext) -> ToolResult:
        """Run the AgentOutput tool."""
        entry = self.tasks.get(inp.string("task_id"))
        if entry is None:
            return ToolResult.error(f"No task {inp.string('task_id')!r}; see TaskList.")
        if not entry.task.done() and inp.boolean("block", default=True):
            timeout = inp.raw.get("timeout", 30_000)
            await asyncio.wait([entry.task], timeout=float(timeout) / 1000)
        if not entry.task.done():
            return ToolResult.ok(f"{entry.id} is still running (subagent {entry.agent}); ask "
                                 "again later.", task_id=entry.id, state="running")
        return task_answer(entry)

    # -- slash commands

    def slash_commands(self) -> Iterator[SlashCommand]:
        """Yield a command per user-invocable skill: `/name args`."""
        from aimon_core.command import SlashCommand

        for skill in self.skills.values():
            if skill.invoke.user:
                hint = f" {skill.argument_hint}" if skill.argument_hint else ""
                yield SlashCommand(name=skill.name, description=_one_line(skill.description, 70),
                                   run=self._slash_runner(skill.name),
                                   usage=f"/{skill.name}{hint}", origin=f"skill {skill.name}")

    def _slash_runner(self, name: str) -> CommandRun:
        async def run(args: str, host: CommandHost) -> CommandOutcome:
            return await self.run_skill_command(name, args, host)

        return run

    async def run_skill_command(self, name: str, args: str, host: CommandHost
                                ) -> CommandOutcome:
        """Run `/name args`: an inline skill becomes the turn's prompt; a fork prints its answer."""
        from aimon_core.command import CommandOutcome

        try:
            skill = self.skill_named(name, by_model=False)
            _refuse_denied(host, "Skill", skill.name)
            live = await host.live_session()
            if skill.execution.mode != "fork":
                return CommandOutcome.submit(
                    _render(skill, args, self.render_context(session_id=str(live.id))))
            request = self.forked(skill, args)
            result = await self.fork(request, *self._session_turn(host))
        except InvokeError as exc:
            return CommandOutcome.error(str(exc))
        return _fork_outcome(result, request.agent.name)

    async def run_task_command(self, agent_name: str, goal: str, host: CommandHost
                               ) -> CommandOutcome:
        """Run `/task NAME goal`: the subagent's final answer, as it is."""
        from aimon_core.command import CommandOutcome

        try:
            agent = self.agent_named(agent_name)
            _refuse_denied(host, "Task", agent.name)
            await host.live_session()
            request = ForkRequest(agent=agent, goal=goal, execution_id=new_execution_id(),
                                  label="task")
            result = await self.fork(request, *self._session_turn(host))
        except InvokeError as exc:
            return CommandOutcome.error(str(exc))
        return _fork_outcome(result, agent.name)

    def _session_turn(self, host: CommandHost) -> tuple[Turn, ToolContext]:
        """Return the Turn and tool context of a fork a slash command starts in its session."""
        live = host.live
        if live is None:
            raise InvokeError("no session is open to run the fork in")
        return live.command_turn(), live.tool_context

    def skills_text(self, name: str = "") -> str:
        """Return what /skills shows: each skill (or the one called `name`), its layer and
        file, and problems."""
        notes = {s.name: tool_list_notes(s.allowed_tools, self.tool_names)
                 for s in self.skills.values()}
        return listing_text("skills", self.skills.listing(), self.skills.failures, notes,
                            name=name)

    def agents_text(self, name: str = "") -> str:
        """Return what /agents shows: each subagent (or the one called `name`), its layer
        and file, and problems."""
        notes = {a.name: tool_list_notes(a.tools or (), self.tool_names)
                 for a in self.agents.values()}
        return listing_text("subagents", self.agents.listing(), self.agents.failures, notes,
                            name=name)

    def listed(self, kind: str) -> tuple[tuple[str, str], ...]:
        """Return the user-invocable "skills" or the "agents", as (name, description)."""
        if kind == "skills":
            return tuple((s.name, _one_line(s.description, 70)) for s in self.skills.values()
                         if s.invoke.user)
        return tuple((a.name, _one_line(a.description, 70)) for a in self.agents.values())


def _failures_named(failures: tuple[LoadFailure, ...], name: str) -> list[LoadFailure]:
    """Return the files that failed to load and would have defined `name` (by file name)."""
    return [f for f in failures if name in (f.path.stem, f.path.parent.name)]


def _refuse_denied(host: CommandHost, tool: str, name: str) -> None:
    """Raise InvokeError when a deny rule names what a slash command would start.

    `Skill(review)` denies `/review` and `/skill review` as it denies the Skill tool;
    `Task(explore)` (or Claude Code's `Agent(explore)`) denies `/task explore`. Typing the
    command is the approval an ask rule wants; a deny rule is not lifted by it.
    """
    from aimon_core.permission import Verdict, decide_name

    policy = host.policy
    decision = decide_name(tool, name, policy.rules) if policy is not None else None
    if decision is not None and decision.verdict is Verdict.DENY:
        raise InvokeError(f"{tool}({name}) is not run: {decision.reason}.")


def _fork_outcome(result: ExecutionResult, agent: str) -> CommandOutcome:
    """Return a fork's answer as a command's outcome: Markdown, with what it cost."""
    from aimon_core.command import CommandOutcome

    return CommandOutcome(text=fork_answer(result, agent), markdown=True,
                          is_error=not result.stop.ok, usage=result.usage,
                          cost_usd=result.cost_usd)


def task_answer(entry: BackgroundTask) -> ToolResult:
    """Return what AgentOutput says about a finished background task."""
    if entry.task.cancelled():
        return ToolResult.error(f"Task {entry.id} was stopped before it finished.")
    exc = entry.task.exception()
    if exc is not None:
        return ToolResult.error(f"Task {entry.id} failed: {exc}")
    result = entry.task.result()
    return ToolResult.ok(fork_answer(result, entry.agent), task_id=entry.id,
                         stop=result.stop.value, agent=entry.agent)


def _render(skill: Skill, args: str, context: RenderContext) -> str:
    from aimon_core.skill import render_skill

    return render_skill(skill, args, context)


def _one_line(text: str, limit: int = 400) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def listing_text(kind: str, entries: tuple[object, ...], failures: tuple[object, ...],
                 notes: Mapping[str, list[str]] | None = None, *, name: str = "") -> str:
    """Return a listing of loaded definitions: name, layer, path, warnings (and `notes`, by
    name); then failures. With `name`, only what is called so (or failed to load as it)."""
    from aimon_core.skill import ListingEntry, LoadFailure

    if name:
        entries = tuple(e for e in entries if isinstance(e, ListingEntry) and e.name == name)
        failures = tuple(f for f in failures if isinstance(f, LoadFailure)
                         and name in (f.path.stem, f.path.parent.name))
        if not entries and not failures:
            return f"No {kind[:-1]} named {name!r}: /{kind.replace('sub', '')} lists them."
    count = len([e for e in entries if isinstance(e, ListingEntry) and not e.disabled])
    lines = [f"{count} {kind[:-1] if count == 1 else kind} loaded:"]
    for entry in entries:
        assert isinstance(entry, ListingEntry)
        state = "  (disabled)" if entry.disabled else ""
        lines.append(f"  {entry.name:<20} {entry.layer.value:<14} {entry.path}{state}")
        if not entry.disabled:
            lines.append(f"      {_one_line(entry.description, 100)}")
        warnings = (*entry.warnings, *(notes or {}).get(entry.name, ()))
        lines.extend(f"      warning: {w}" for w in warnings)
    for failure in failures:
        assert isinstance(failure, LoadFailure)
        lines.append(f"  not loaded: {failure.path} ({failure.layer.value}): {failure.message}")
    return "\n".join(lines)
