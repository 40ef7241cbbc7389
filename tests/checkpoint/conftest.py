"""Scratch projects for the checkpoint tests: real files, modes, symlinks, optionally git."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}


def make_project(root: Path) -> Path:
    """Write a small project: sources, an executable, a private file, a link, build output."""
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def hello():\n    return 'hello'\n")
    (root / "src" / "pkg" / "b.py").write_text("B = 1\n")
    (root / "notes.txt").write_text("hello world\nsecond line\n")
    (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (root / "run.sh").chmod(0o755)
    (root / "secret.txt").write_text("keep me private\n")
    (root / "secret.txt").chmod(0o600)
    (root / "link").symlink_to("src/a.py")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("module.exports = 1\n")
    return root


def tree_state(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Return every path under `root` (but .git and .aimon) with its kind, content, mode."""
    state: dict[str, tuple[str, bytes, int]] = {}
    for folder, dirs, files in os.walk(root):
        # .git is compared by git_state; .aimon is aimon's own (recopied at every start).
        dirs[:] = sorted(d for d in dirs if d not in (".git", ".aimon"))
        for name in [*dirs, *files]:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            info = path.lstat()
            if path.is_symlink():
                state[rel] = ("link", os.fsencode(str(path.readlink())), 0)
            elif path.is_dir():
                state[rel] = ("dir", b"", 0)
            else:
                state[rel] = ("file", path.read_bytes(), info.st_mode & 0o7777)
    return state


def git(root: Path, *args: str) -> str:
    """Run git in `root` and return its output."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ENV})
    return done.stdout


def make_git_repo(root: Path) -> None:
    """Commit the project, leave a stash entry and a staged change behind."""
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("node_modules/\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first")
    (root / "notes.txt").write_text("stashed change\n")
    git(root, "stash", "-q")
    (root / "src" / "pkg" / "b.py").write_text("B = 2\n")
    git(root, "add", "src/pkg/b.py")


def git_state(root: Path) -> dict[str, str]:
    """Return HEAD, refs, stash, index and a digest of every file under .git."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root / ".git"):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder) / name
            digest.update(str(path).encode() + path.read_bytes())
    return {"head": git(root, "rev-parse", "HEAD"), "refs": git(root, "for-each-ref"),
            "stash": git(root, "stash", "list"), "index": git(root, "ls-files", "-s"),
            "status": git(root, "status", "--porcelain"), "files": digest.hexdigest()}
