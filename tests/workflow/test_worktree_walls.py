"""What a worktree task cannot reach: aimon's own folders through the sandbox, and programs a
repository's git configuration names through aimon's own git.

A worktree lies under aimon's data folder. With the OS sandbox on, a command of a worktree
task may write its worktree and nothing of the project, and may read neither aimon's data
folder (every project's sessions) nor its config folder, though its project is inside one.
aimon's own git (making, committing, comparing worktrees) runs only where the repository's
configuration runs no program; hooks are turned off for it, so they do not count.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.agent import Turn
from aimon_core.llm import LLMRequest, LLMResponse, ToolResultBlock, reply
from aimon_core.session import user_config_dir, user_data_dir
from aimon_core.shell import probe_sandbox
from aimon_core.workflow import RunState, WorkflowError
from tests.workflow.conftest import assemble, by_prompt, git, make_repo

ONE = """\
name: one
stages:
  - name: work
    tasks:
      - {agent: general-purpose, prompt: "WT do it", worktree: true}
"""
SECRET = "SECRET-OF-ANOTHER-SESSION-5f1c"


def run(root: Path, steps: list[LLMResponse], seen: list[LLMRequest], *allowed: str,
        sandbox: bool = False):  # type: ignore[no-untyped-def]
    def step(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        return steps.pop(0)

    client = by_prompt({"WT": step}, calls=len(steps))

    async def main():  # type: ignore[no-untyped-def]
        async with assemble(root, client, *allowed, sandbox=sandbox) as assembly:
            assert assembly.workflows is not None
            pipeline = (await asyncio.to_thread(assembly.workflows.library)).get("one")
            assert pipeline is not None
            return await assembly.workflows.runner.run(pipeline, project_root=root,
                                                       parent=Turn())

    return asyncio.run(main())


def results(request: LLMRequest) -> list[str]:
    return [b.text for m in request.messages for b in m.content if isinstance(b, ToolResultBlock)]


# (what the command does, the command, whether it must succeed); @P@ is the project,
# @D@ aimon's data folder, @C@ its config folder.
SANDBOXED = [
    ("read another session", f"grep -r {SECRET} @D@/projects", False),
    ("list the data folder", "ls @D@/projects", False),
    ("read aimon's settings", "cat @C@/settings.json", False),
    ("write the project", "echo x > @P@/escaped.txt", False),
    ("write the worktree", "echo ok > inside.txt && cat inside.txt", True),
    ("read the worktree", "cat calc.py", True),
]


@pytest.mark.skipif(not probe_sandbox().available, reason="the sandbox cannot run here")
@pytest.mark.parametrize("what,command,works", SANDBOXED, ids=[c[0] for c in SANDBOXED])
def test_a_sandboxed_worktree_task_reaches_its_worktree_only(
        tmp_path: Path, what: str, command: str, works: bool) -> None:
    root = make_repo(tmp_path / "p", {"one": ONE})
    data, config = user_data_dir(), user_config_dir()
    (data / "projects" / "other").mkdir(parents=True)
    (data / "projects" / "other" / "s.jsonl").write_text(f'{{"text": "{SECRET}"}}\n')
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(f'{{"env": {{"TOKEN": "{SECRET}"}}}}\n')
    line = command.replace("@P@", str(root)).replace("@D@", str(data)).replace(
        "@C@", str(config))
    seen: list[LLMRequest] = []
    record = run(root, [reply("", ("Bash", {"command": line})), reply("done")], seen,
                 "Bash", sandbox=True)
    assert record.state is RunState.COMPLETED, record.reason
    (result,) = results(seen[-1])
    assert SECRET not in result
    assert not (root / "escaped.txt").exists()
    if works:
        assert "Exit code" not in result, result
    else:
        assert "Exit code" in result or "denied" in result.lower(), result


def hostile_config(root: Path, key: str, marker: Path) -> None:
    """Make the repository's configuration name a program that leaves `marker`."""
    script = root.parent / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    if key.startswith("filter."):  # committed first: the test's own git must not run it
        (root / ".gitattributes").write_text("*.py filter=evil\n")
        git(root, "add", ".gitattributes")
        git(root, "commit", "-q", "-m", "attributes")
    git(root, "config", key, str(script))


CONFIGS = ["core.fsmonitor", "filter.evil.smudge", "filter.evil.clean", "core.hooksPath",
           "diff.external", "core.pager", "core.sshCommand", "alias.worktree"]


@pytest.mark.parametrize("key", CONFIGS)
def test_aimon_runs_no_git_where_the_configuration_names_a_program(tmp_path: Path,
                                                                  key: str) -> None:
    root = make_repo(tmp_path / "p", {"one": ONE})
    marker = tmp_path / "ran"
    hostile_config(root, key, marker)
    with pytest.raises(WorkflowError, match="configured to run programs"):
        run(root, [], [])
    assert not marker.exists()


def test_hooks_do_not_stop_worktrees_and_never_run(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "p", {"one": ONE})
    marker = tmp_path / "hooked"
    for hook in ("post-checkout", "pre-commit", "post-commit", "reference-transaction"):
        path = root / ".git" / "hooks" / hook
        path.write_text(f"#!/bin/sh\ntouch {marker}\n")
        path.chmod(0o755)
    steps = [reply("", ("Write", {"file_path": "new.txt", "content": "x\n"})), reply("done")]
    record = run(root, steps, [], "Write")
    assert record.state is RunState.COMPLETED, record.reason
    task = record.task(0, 0)
    assert task is not None and task.diff is not None and "+x" in task.diff
    assert not marker.exists()
