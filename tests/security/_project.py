"""A small project for the unit tables of the expansion, content and credential classes.

A git repository (inert configuration, so git commands can be read-only) holding ordinary
files, a committed `.env` with a secret, and a list of file names; decisions are asked with
it as the working directory. `rules` builds the settings rules a table row names.
"""

from __future__ import annotations

from pathlib import Path

from aimon_core.permission import Decision, PermissionRules, Verdict, evaluate_command

from .conftest import git, make_repo

ALLOW, ASK, DENY = Verdict.ALLOW, Verdict.ASK, Verdict.DENY
SECRET = "SECRET=hunter2-in-dotenv"
FILES = {
    "a.txt": "alpha\nfoo\n",
    "b.txt": "beta\n",
    "src/a.py": "print('foo')\n",
    "src/b.py": "print('bar')\n",
    "list": "a.txt\n",
    "patterns.txt": "foo\n",
    ".env": SECRET + "\n",
}


def make_project(root: Path) -> Path:
    """Create the project at `root` (a git repository with everything committed)."""
    make_repo(root, FILES)
    (root / "other").mkdir()
    git(root, "tag", "v1")
    return root


def rules(*, allow: tuple[str, ...] = (), deny: tuple[str, ...] = (),
          ask: tuple[str, ...] = ()) -> PermissionRules:
    """Return settings rules."""
    return PermissionRules.parse(allow=allow, deny=deny, ask=ask)


def decide_in(project: Path, command: str, given: PermissionRules,
              cwd: Path | None = None) -> Decision:
    """Decide `command` run in `cwd` (default: the project root)."""
    return evaluate_command(command, given, cwd=cwd or project, project_root=project)
