"""The repository files a trusted command runs: trusted for their content too.

A hook or an MCP server is trusted for what its command says; most such commands run a script
that lies in the repository (`.claude/hooks/check.sh`, `python "$CLAUDE_PROJECT_DIR"/tools/x.py`,
`node ./server.js`). Were only the command trusted, a pull that rewrites the script would run
the new code without a question. So the files of the folder the command runs from that it
*runs* are part of what is trusted, by the digest of their bytes: a changed script is held back
and asked about like a changed command. A file is run when it is the program of a simple
command, or, after a program that runs what it is given (a shell, an interpreter, `env`,
`timeout`, `uv run`...), the first file among its words or an option's value (`--require=x.js`).
Files a command only makes, writes or reads (`touch ran`, `> log`, `tee out`, a script's own
arguments) are not scripts: they change as the hook runs. A command that runs no such file is
trusted by its text alone, as before (so its earlier trust still holds).

What a script reads or runs by itself (a file it sources, a module it imports) is not followed:
the sandbox, not trust, is the wall for what code does once it runs.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

# Bigger files are not scripts a person would review; they are named by size and time instead.
_MAX_HASHED = 4 * 1024 * 1024
# Programs that run the file they are given (by base name; versions such as python3.12 too).
_RUNNERS = re.compile(
    r"(ba|da|z|k|fi|c|tc)?sh|source|\.|exec|env|nohup|timeout|nice|ionice|stdbuf|xargs|"
    r"python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|tsx|ts-node|ruby|perl|php|lua|Rscript|"
    r"uv|uvx|run|npx|pnpm|yarn|pipx|poetry|java|osascript|pwsh|powershell")
_SEPARATORS = frozenset({";", "&", "&&", "|", "||", "|&", "(", ")", ";;"})


def named_scripts(words: str | Sequence[str], folder: Path,
                  variables: Mapping[str, str] | None = None) -> dict[str, str]:
    """Return `{path as written: digest}` for each file in `folder` the command runs.

    `words` is a shell command line (split as the shell would) or an argument list; `folder`
    is where it runs (relative words are resolved there, and only files inside it count);
    `variables` are put in for `$NAME` and `${NAME}`.
    """
    tokens = _tokens(words) if isinstance(words, str) else list(words)
    real_folder = folder.resolve()
    scripts: dict[str, str] = {}

    def digest_of(word: str) -> str | None:
        path = _expand(word, variables or {})
        if not path or path.startswith("-"):
            return None
        found = _digest(real_folder / path, real_folder)
        if found is not None:
            scripts[word] = found
        return found

    for command in _simple_commands(tokens):
        words_run = [w for w in command if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w)]
        if not words_run:
            continue
        program, *rest = words_run
        digest_of(program)
        if not _RUNNERS.fullmatch(Path(_expand(program, variables or {})).name):
            continue
        for word in rest:
            if word.startswith("-"):
                if "=" in word:
                    digest_of(word.split("=", 1)[1])
                continue
            if digest_of(word) is not None:
                break  # the script: what follows are its own arguments
    return scripts


def _simple_commands(tokens: list[str]) -> list[list[str]]:
    """Split tokens at `;`, `&&`, `|`... and drop redirections with their targets."""
    commands: list[list[str]] = [[]]
    redirected = False
    for token in tokens:
        if redirected:
            redirected = False
        elif token in _SEPARATORS:
            commands.append([])
        elif set(token) <= set("0123456789&<>|") and set(token) & set("<>"):
            redirected = True
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: the words as they stand
        return command.split()


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
