"""The repository files a trusted command runs: trusted for their content too.

A hook or an MCP server is trusted for what its command says; most such commands run a script
that lies in the repository (`.claude/hooks/check.sh`, `python "$CLAUDE_PROJECT_DIR"/tools/x.py`,
`node ./server.js`). Were only the command trusted, a pull that rewrites the script would run
the new code without a question. So every word of the command that names a regular file in the
folder it runs from (after the project- or skill-folder variables are put in) is part of what
is trusted, by the digest of its bytes: a changed script is held back and asked about like a
changed command. Words written to (`> log.txt`) are not scripts. A command that names no such
file is trusted by its text alone, as before (so its earlier trust still holds).

What a script reads or runs by itself (a file it sources, a module it imports) is not followed:
the sandbox, not trust, is the wall for what code does once it runs.
"""

from __future__ import annotations

import hashlib
import shlex
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

# Bigger files are not scripts a person would review; they are named by size and time instead.
_MAX_HASHED = 4 * 1024 * 1024
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})


def named_scripts(words: str | Iterable[str], folder: Path,
                  variables: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return `{path as written: digest}` for each file in `folder` the command names.

    `words` is a shell command line (split as the shell would) or an argument list; `folder`
    is where it runs (relative words are resolved there, and only files inside it count);
    `variables` are put in for `$NAME` and `${NAME}`.
    """
    tokens = _tokens(words) if isinstance(words, str) else list(words)
    real_folder = folder.resolve()
    scripts: dict[str, str] = {}
    written = False
    for token in tokens:
        if written:
            written = False
            continue
        if token in _WRITES or (token.endswith((">", ">>")) and set(token) <= set("0123456789&>|")):
            written = True
            continue
        for word in _candidates(token):
            path = _expand(word, variables or {})
            if not path or path.startswith("-"):
                continue
            digest = _digest(real_folder / path, real_folder)
            if digest is not None:
                scripts[word] = digest
    return scripts


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: the words as they stand
        return command.split()


def _candidates(token: str) -> tuple[str, ...]:
    """Return the token, and what follows `=` in `--opt=path` or `NAME=path`."""
    if "=" in token:
        return token, token.split("=", 1)[1]
    return (token,)


def _expand(word: str, variables: Mapping[str, str]) -> str:
    for name, value in variables.items():
        word = word.replace("${" + name + "}", value).replace("$" + name, value)
    return word


def _digest(path: Path, real_folder: Path) -> str | None:
    """Return the digest of `path` if it is a regular file inside `real_folder`, else None."""
    try:
        real = path.resolve()
        if not real.is_relative_to(real_folder):
            return None
        status = real.stat()
        if not stat.S_ISREG(status.st_mode):
            return None
        if status.st_size > _MAX_HASHED:
            return f"size:{status.st_size}:mtime:{status.st_mtime_ns}"
        return hashlib.sha256(real.read_bytes()).hexdigest()
    except (OSError, ValueError, RuntimeError):  # unreadable, a bad name, a link loop
        return None
