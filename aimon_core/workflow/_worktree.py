"""Git worktrees for workflow tasks: one folder and one branch per task, outside the project.

A `worktree: true` task works in `<data>/worktrees/<project key>/<run id>/<stage>-<n>`, a
checkout of the commit the run started from, on the branch `aimon/<run id>/<stage>-<n>`. When
it finishes, everything it changed is committed on that branch, and the diff against the start
is kept with the task. A merge stage asks git whether the branch merges cleanly
(`git merge-tree`, which touches neither the working tree nor the index) before anything is
merged. Worktrees are removed when the run ends well, kept when it does not (to look into);
the branches stay until the user deletes them.

This is git that aimon runs by itself, so it runs only in a repository whose configuration
runs nothing (`repository_is_inert`; the repository's hooks are turned off for these commands,
so they do not count), with the environment of the model's commands (no credentials).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

_GIT_TIMEOUT = 120.0
_DIFF_LIMIT = 200_000
_HARDENING = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
              "-c", "commit.gpgSign=false", "-c", "user.name=aimon workflow",
              "-c", "user.email=aimon-workflow@localhost")


class WorktreeError(Exception):
    """A worktree could not be made, committed, compared or removed; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Worktree:
    """A task's worktree: its folder and its branch."""

    path: Path
    branch: str


def _inert_without_hooks(project: Path) -> bool:
    from aimon_core.filesystem import repository_is_inert

    return repository_is_inert(project, hooks_run=False)


class Worktrees:
    """Makes, commits, compares and removes the worktrees of workflow tasks.

    Args:
        base_dir: the folder worktrees go in (default: `worktrees/` under aimon's data folder).
        git_allowed: whether aimon may run git by itself in a project (default: only where
            the repository's configuration runs no program).
    """

    def __init__(self, base_dir: Path | None = None, *,
                 git_allowed: Callable[[Path], bool] = _inert_without_hooks) -> None:
        if base_dir is None:
            from aimon_core.session import user_data_dir

            base_dir = user_data_dir() / "worktrees"
        self.base_dir = Path(base_dir)
        self._git_allowed = git_allowed
        # One git command at a time: tasks of a stage make their worktrees together, and two
        # `git worktree add` in one repository at once may trip over each other's locks.
        self._lock: asyncio.Lock | None = None

    def place(self, project: Path, run_id: str, key: str) -> Worktree:
        """Return where a task's worktree goes and its branch (nothing is made)."""
        from aimon_core.session import project_key

        folder = self.base_dir / project_key(str(project)) / run_id / key
        return Worktree(path=folder, branch=f"aimon/{run_id}/{key}")

    async def head(self, project: Path) -> str | None:
        """Return the commit the project's HEAD is at; None outside git or before a commit."""
        if not await asyncio.to_thread(_is_checkout, project):
            return None
        code, out, _ = await self._git(project, "rev-parse", "--verify", "-q", "HEAD^{commit}",
                                       check=False)
        return out.strip() if code == 0 and out.strip() else None

    async def prepare(self, project: Path, worktree: Worktree, base: str) -> None:
        """Make the worktree on its branch from `base`; one that exists is put back to its
        branch's last commit (what an interrupted attempt left is dropped)."""
        if (worktree.path / ".git").exists():
            await self._git(worktree.path, "reset", "-q", "--hard", worktree.branch)
            await self._git(worktree.path, "clean", "-q", "-fd")
            return
        from aimon_core._atomic import private_dir

        private_dir(worktree.path.parent)
        await self._git(project, "worktree", "prune")
        code, _, _ = await self._git(project, "rev-parse", "--verify", "-q",
                                     f"refs/heads/{worktree.branch}", check=False)
        if code == 0:
            await self._git(project, "worktree", "add", "-q", str(worktree.path),
                            worktree.branch)
        else:
            await self._git(project, "worktree", "add", "-q", "-b", worktree.branch,
                            str(worktree.path), base)

    async def collect(self, worktree: Worktree, base: str, message: str) -> str:
        """Commit everything the task changed on its branch; return the diff from `base`."""
        await self._git(worktree.path, "add", "-A")
        changed, _, _ = await self._git(worktree.path, "diff", "--cached", "--quiet",
                                        check=False)
        if changed == 1:
            await self._git(worktree.path, "commit", "-q", "--no-verify", "-m", message)
        _, diff, _ = await self._git(worktree.path, "diff", "--no-ext-diff", "--no-textconv",
                                     "--no-color", base, worktree.branch)
        if len(diff) > _DIFF_LIMIT:
            diff = diff[:_DIFF_LIMIT] + f"\n[diff cut at {_DIFF_LIMIT:,} characters: see " \
                                        f"git diff {base[:12]} {worktree.branch}]\n"
        return diff

    async def ahead(self, project: Path, branch: str) -> int:
        """Return how many commits `branch` has that the project's HEAD does not."""
        _, out, _ = await self._git(project, "rev-list", "--count", f"HEAD..{branch}")
        return int(out.strip() or 0)

    async def conflicts(self, project: Path, branch: str) -> tuple[str, ...]:
        """Return the files a merge of `branch` into HEAD would conflict in (none: clean).

        Nothing in the project changes: git computes the merge in its object store only.
        """
        code, out, err = await self._git(project, "merge-tree", "--write-tree", "--name-only",
                                         "--no-messages", "HEAD", branch, check=False)
        if code == 0:
            return ()
        if code != 1:
            raise WorktreeError(f"git merge-tree failed: {err.strip() or out.strip()}")
        return tuple(line for line in out.splitlines()[1:] if line.strip())

    async def remove(self, project: Path, worktree: Worktree) -> None:
        """Remove a worktree (its branch stays)."""
        if worktree.path.exists():
            await self._git(project, "worktree", "remove", "--force", str(worktree.path))
        await self._git(project, "worktree", "prune", check=False)

    async def _git(self, cwd: Path, *args: str, check: bool = True) -> tuple[int, str, str]:
        """Run aimon's own git in `cwd`; WorktreeError when it fails (with `check`)."""
        if not await asyncio.to_thread(self._git_allowed, cwd):
            raise WorktreeError(
                f"the git repository of {cwd} is configured to run programs (filters, "
                "drivers, fsmonitor, ...), and aimon does not run git there by itself; use "
                "a task without `worktree: true`")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            return await _run_git(cwd, (*_HARDENING, *args), check=check)


async def _run_git(cwd: Path, args: Sequence[str], *, check: bool) -> tuple[int, str, str]:
    from aimon_core.shell import model_env

    env = {k: v for k, v in model_env(os.environ).items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C")
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", *args, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True)
    except OSError as exc:
        raise WorktreeError(f"cannot run git in {cwd}: {exc}") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), _GIT_TIMEOUT)
    except (TimeoutError, asyncio.CancelledError) as exc:
        proc.kill()
        await proc.wait()
        if isinstance(exc, TimeoutError):
            raise WorktreeError(f"git {args[-1]} took more than {_GIT_TIMEOUT:g} s in {cwd}"
                                ) from None
        raise
    code = proc.returncode if proc.returncode is not None else -1
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    if check and code != 0:
        shown = " ".join(args[len(_HARDENING):] if args[:len(_HARDENING)] == _HARDENING else args)
        raise WorktreeError(f"git {shown} failed in {cwd}: {stderr.strip() or stdout.strip()}")
    return code, stdout, stderr


def _is_checkout(project: Path) -> bool:
    from aimon_core.filesystem import find_repository

    repository = find_repository(project)
    return repository is not None and repository.worktree is not None
