"""Class: files aimon opens by itself, each made a symlink to somewhere it must not read.

aimon reads instruction files, custom commands and their `@path` attachments, skills (and
skill folders), agents and their Mustache partials, settings files and `.mcp.json` on its own,
before anyone has been asked anything. The table is every such file by every target a cloned
repository could point it at: a file outside the project, `/proc/self/environ` (aimon's own
environment, as the process started), `/dev/zero`, a FIFO, a dangling link and a loop.

For every case the secret never shows in anything aimon made of the file, the call returns
(no FIFO or device blocks it, no endless read), and where a file was refused a warning names
it. A second table puts a path deny rule on the file the link leads to, inside the project.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SECRET = "sk-own-read-SECRET-5f1d2c"
# /proc/self/environ shows the environment the process started with, not later changes: the
# longest of those entries stands for the secret a link to it would leak.
ENVIRON_WITNESS = max(Path("/proc/self/environ").read_bytes().split(b"\0"), key=len).decode(
    "utf-8", "replace")
Readable = Callable[[Path], bool] | None
Run = Callable[[Path, Readable], str]
"""(project, read filter) -> everything aimon made of the files, as text."""

MARKDOWN = f"---\nname: leak\ndescription: {SECRET}\n---\n{SECRET} in the body\n"
JSON = f'{{"model": "{SECRET}"}}\n'
MCP = f'{{"mcpServers": {{"s": {{"command": "{SECRET}"}}}}}}\n'


def _instructions(project: Path, readable: Readable) -> str:
    from aimon_core.agent import gather_environment_sync

    if readable is None:
        return repr(gather_environment_sync(project, project))
    return repr(gather_environment_sync(project, project, path_filter=readable))


def _context_instructions(project: Path, readable: Readable) -> str:
    """The instructions context provider, read at every turn (imports followed)."""
    from aimon_core.context import InstructionsProvider
    from aimon_core.filesystem import LocalFileSystem
    from aimon_core.shell import LocalShell
    from aimon_core.tools import ToolContext, ToolState

    ctx = ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                      shell=LocalShell(), state=ToolState(), path_filter=readable)
    return repr(InstructionsProvider().read(ctx))


def _commands(project: Path, readable: Readable) -> str:
    from aimon_core.command import command_roots, custom_commands, load_custom_commands

    roots = command_roots(project, project.parent / "claude-user")
    kw = {} if readable is None else {"readable": readable}
    loaded = load_custom_commands(roots, project_root=project, **kw)
    commands, notes = custom_commands(project, (), claude_user=project.parent / "claude-user",
                                      **kw)
    return repr((loaded, [c.description for c in commands], notes))


def _attachment(project: Path, readable: Readable) -> str:
    from aimon_core.command._custom import expand, parse_command

    command = parse_command("att", project / ".aimon" / "commands" / "att.md")
    kw = {} if readable is None else {"readable": readable}
    return repr(asyncio.run(expand(command, "", project, None, **kw)))


def _skills(project: Path, readable: Readable) -> str:
    from aimon_core.skill import default_roots, load_skills
    from aimon_core.skill._registry import SkillRoots

    roots = default_roots(project)
    if readable is not None:
        roots = SkillRoots(project_root=project, user_dir=roots.user_dir, readable=readable)
    registry = load_skills(roots)
    return repr((registry.values(), registry.listing(), registry.failures))


def _agents(project: Path, readable: Readable) -> str:
    from aimon_core.runtime import RuntimeSetupError
    from aimon_core.runtime._build import find_agent
    from aimon_core.subagent import default_agent_roots, load_agents
    from aimon_core.subagent._registry import AgentRoots

    roots = default_agent_roots(project)
    if readable is not None:
        roots = AgentRoots(project_root=project, user_dir=roots.user_dir, readable=readable)
    registry = load_agents(roots)
    rendered = [agent.render_prompt() for agent in registry.values()]
    try:
        found = repr(find_agent("leak", project) if readable is None
                     else find_agent("leak", project, readable))
    except RuntimeSetupError as exc:
        found = str(exc)
    return repr((rendered, registry.listing(), registry.failures, found))


def _partials(project: Path, readable: Readable) -> str:
    from aimon_core.subagent import default_agent_roots, load_agents
    from aimon_core.subagent._registry import AgentRoots

    roots = default_agent_roots(project)
    if readable is not None:
        roots = AgentRoots(project_root=project, user_dir=roots.user_dir, readable=readable)
    registry = load_agents(roots)
    agent = registry.get("withpartial")
    rendered = agent.render_prompt() if agent is not None else ""
    return repr((rendered, registry.listing(), registry.failures))


def _settings(project: Path, readable: Readable) -> str:
    from aimon_core.config import SettingsError, TrustStore, load_settings

    try:
        loaded = load_settings(project, trust_store=TrustStore(project.parent / "t.json"),
                               trust_all=True)
    except SettingsError as exc:
        return str(exc)
    return repr(loaded)


def _early_check(project: Path, readable: Readable) -> str:
    """The command line's look at the settings files before anything starts (no key set)."""
    from aimon_cli._early import provider_problem

    problem = provider_problem(provider=None, model=None, base_url=None, project_root=project,
                               env={"AIMON_NO_LOCAL_PROBE": "1"})
    return repr(problem) + " (the settings files were looked at)"


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnRead:
    """One file aimon opens by itself: where it is, what an outside target would hold."""

    id: str
    link: str
    """The file (relative to the project) made a symlink."""
    content: str
    """What the outside file holds."""
    run: Run
    files: dict[str, str] = field(default_factory=dict)
    """Other files of the project (relative path -> text)."""
    folder: bool = False
    """The link is a folder holding `SKILL.md`, not a file."""


OWN_READS = (
    OwnRead(id="AIMON.md", link="AIMON.md", content=SECRET, run=_instructions),
    OwnRead(id="AGENTS.md", link="AGENTS.md", content=SECRET, run=_instructions),
    OwnRead(id="CLAUDE.md", link="CLAUDE.md", content=SECRET, run=_instructions),
    OwnRead(id="AIMON.md_provider", link="AIMON.md", content=SECRET,
            run=_context_instructions),
    OwnRead(id="instruction_import", link="docs/leak.md", content=SECRET,
            run=_context_instructions, files={"AIMON.md": "Rules. @docs/leak.md\n"}),
    OwnRead(id="aimon_command", link=".aimon/commands/leak.md", content=MARKDOWN,
            run=_commands),
    OwnRead(id="claude_command", link=".claude/commands/leak.md", content=MARKDOWN,
            run=_commands),
    OwnRead(id="command_attachment", link="leak.txt", content=SECRET, run=_attachment,
            files={".aimon/commands/att.md": "Read @leak.txt please\n"}),
    OwnRead(id="aimon_skill", link=".aimon/skills/leak/SKILL.md", content=MARKDOWN,
            run=_skills),
    OwnRead(id="claude_skill", link=".claude/skills/leak/SKILL.md", content=MARKDOWN,
            run=_skills),
    OwnRead(id="skill_folder", link=".aimon/skills/leak", content=MARKDOWN, run=_skills,
            folder=True),
    OwnRead(id="aimon_agent", link=".aimon/agents/leak.md", content=MARKDOWN, run=_agents),
    OwnRead(id="claude_agent", link=".claude/agents/leak.md", content=MARKDOWN, run=_agents),
    OwnRead(id="agent_partial", link=".aimon/agents/leak.mustache", content=SECRET,
            run=_partials,
            files={".aimon/agents/withpartial.md": "---\nname: withpartial\ndescription: p\n"
                                                   "---\nHello {{> leak}}\n"}),
    OwnRead(id="partial_in_cwd", link="leak.mustache", content=SECRET, run=_partials,
            files={".aimon/agents/withpartial.md": "---\nname: withpartial\ndescription: p\n"
                                                   "---\nHello {{> leak}}\n"}),
    OwnRead(id="aimon_settings", link=".aimon/settings.json", content=JSON, run=_settings),
    OwnRead(id="aimon_local_settings", link=".aimon/settings.local.json", content=JSON,
            run=_settings),
    OwnRead(id="claude_settings", link=".claude/settings.json", content=JSON, run=_settings),
    OwnRead(id="claude_local_settings", link=".claude/settings.local.json", content=JSON,
            run=_settings),
    OwnRead(id="mcp_json", link=".mcp.json", content=MCP, run=_settings),
    OwnRead(id="early_settings_check", link=".aimon/settings.json", content=JSON,
            run=_early_check),
)

TARGETS = ("outside", "environ", "dev_zero", "fifo", "dangling", "loop")
# Targets that name a file which exists: aimon must say it skipped it.
WARNED = frozenset({"outside", "environ", "dev_zero", "fifo"})
HANG_SECONDS = 20.0


def _target(kind: str, own: OwnRead, project: Path, outside: Path) -> Path:
    match kind:
        case "outside" if own.folder:
            folder = outside / "skill"
            folder.mkdir()
            (folder / "SKILL.md").write_text(own.content)
            return folder
        case "outside":
            path = outside / "target"
            path.write_text(own.content)
            return path
        case "environ":
            return Path("/proc/self/environ")
        case "dev_zero":
            return Path("/dev/zero")
        case "fifo":
            path = project / "fifo"
            os.mkfifo(path)
            return path
        case "dangling":
            return outside / "missing"
        case _:
            return project / "loop"


def _layout(own: OwnRead, kind: str, tmp_path: Path) -> Path:
    project, outside = tmp_path / "proj", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    for relative, text in own.files.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    link = project / own.link
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(_target(kind, own, project, outside))
    if kind == "loop":
        (project / "loop").symlink_to(link)
    return project


def _within(seconds: float, call: Callable[[], str]) -> str:
    """Return `call()`, failing the test if it raises or has not returned after `seconds`."""
    done: list[str] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            done.append(call())
        except BaseException as exc:  # reported to the test below
            failed.append(exc)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still reading after {seconds:g} s (a FIFO or a device)", pytrace=False)
    if failed:
        pytest.fail(f"raised {failed[0]!r}", pytrace=False)
    return done[0]


def _release(project: Path) -> None:
    fifo = project / "fifo"
    if fifo.exists():
        for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
            try:
                os.close(os.open(fifo, flags))
            except OSError:
                continue


CASES = [pytest.param(own, kind, id=f"{own.id}-{kind}") for own in OWN_READS
         for kind in TARGETS if not (own.folder and kind in ("environ", "dev_zero", "fifo"))]


@pytest.mark.parametrize(("own", "kind"), CASES)
def test_own_read_stays_in_the_project(
    own: OwnRead, kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    project = _layout(own, kind, tmp_path)
    monkeypatch.chdir(project)  # chevron once read partials from the process's folder
    caplog.set_level(logging.WARNING)
    try:
        made = _within(HANG_SECONDS, lambda: own.run(project, None))
    finally:
        _release(project)
    leaked = ENVIRON_WITNESS if kind == "environ" else SECRET
    assert leaked not in made, f"{own.link} -> {kind}: its content reached aimon"
    if kind in WARNED and own.id not in ("partial_in_cwd", "early_settings_check"):
        said = made + "\n".join(record.getMessage() for record in caplog.records)
        assert own.link.split("/")[-1] in said, f"no warning names {own.link}"


# Settings are read before there are deny rules to bind them; a folder has no one file.
DENIED = [pytest.param(own, id=own.id) for own in OWN_READS
          if not own.folder and own.id != "partial_in_cwd"
          and own.run not in (_settings, _early_check)]


@pytest.mark.parametrize("own", DENIED)
def test_a_deny_rule_binds_own_reads(own: OwnRead, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from aimon_core.permission import PermissionRules, read_filter

    project = tmp_path / "proj"
    project.mkdir()
    for relative, text in own.files.items():
        (project / relative).parent.mkdir(parents=True, exist_ok=True)
        (project / relative).write_text(text)
    (project / "secret.txt").write_text(own.content)
    link = project / own.link
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(project / "secret.txt")
    monkeypatch.chdir(project)
    rules = PermissionRules.parse(deny=["Read(./secret.txt)"])
    made = _within(HANG_SECONDS, lambda: own.run(project, read_filter(lambda: rules, project)))
    assert SECRET not in made, f"{own.link}: a file under a deny rule reached aimon"
