"""The values a parsed Bash command is made of, and word-level decoding helpers."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

COULD_NOT_PARSE = "could not parse"
UNUSUAL_CHARACTERS = "unusual characters"

_ANSI_C = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
    "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?",
}
_OUTPUT_OPS = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})
_INPUT_OPS = frozenset({"<", "<<", "<<-", "<<<", ">&-", "<&-"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_FD = re.compile(r"\d+-?|-")
# Unquoted, unescaped pattern characters: `*`, `?`, a `[...]` class, an extglob `@(...)`.
_PATTERN = re.compile(r"[*?]|\[.*\]|[+@!]\(")
_PATTERN_START = re.compile(r"[*?\[]|[+@!]\(")
_ESCAPED = re.compile(r"\\.", re.DOTALL)
# A tilde prefix bash takes from the directory stack or $PWD/$OLDPWD: `~+`, `~-`, `~2`, `~-1`.
_STACK_TILDE = re.compile(r"~([+-]\d*|\d+)(?=/|:|$)")
_ASSIGNMENT_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_ANSI_C_CODE = re.compile(r"x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Redirect:
    """One redirection such as ``2>&1`` or ``> out.txt``."""

    op: str
    target: str
    fd: str | None = None
    dynamic: bool = False
    glob: bool = False
    # The redirection as written (`2> "out file"`), for messages; not part of its value.
    source: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class SimpleCommand:
    """One simple command: its words, leading assignments and redirections.

    ``globs``: the indices of ``argv`` words bash expands as file name patterns (unquoted
    ``*``, ``?``, ``[...]``), which may become any number of words; ``option_globs``: those
    whose words may start with ``-`` (the pattern's first character may match one, or it
    varies an option's name) and so may be options.
    """

    argv: tuple[str, ...]
    assignments: tuple[str, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    dynamic: bool = False
    globs: frozenset[int] = frozenset()
    option_globs: frozenset[int] = frozenset()
    # The command as written, quotes and redirections included, for messages.
    source: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedCommand:
    """Every simple command found anywhere in a command line, and its risky constructs."""

    commands: tuple[SimpleCommand, ...]
    risky: tuple[str, ...]
    # (risky construct, the first place it is written), for messages.
    risky_sources: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def source_of(self, risky: str) -> str:
        """Return where the risky construct `risky` is first written ("" if not known)."""
        return next((text for kind, text in self.risky_sources if kind == risky), "")


def is_write_redirect(redirect: Redirect) -> bool:
    """Tell whether a redirection may write to a file (fd duplication and /dev/null do not)."""
    if redirect.op in {">&", "<&"}:
        if _FD.fullmatch(redirect.target):
            return False
        return redirect.op == ">&" and (
            redirect.dynamic or redirect.target not in _HARMLESS_TARGETS
        )
    if redirect.op in _OUTPUT_OPS:
        return redirect.dynamic or redirect.target not in _HARMLESS_TARGETS
    return redirect.op not in _INPUT_OPS


def pattern_shape(raw: str, text: str) -> tuple[bool, bool]:
    """Return whether a word is a file name pattern, and whether its words may be options.

    Args:
        raw: the word's source outside quotes, quoted parts replaced by ``''``.
        text: the word after quote removal.
    """
    plain = _ESCAPED.sub("__", raw)
    if not _PATTERN.search(plain):
        return False, False
    if _PATTERN_START.match(plain):
        return True, True
    if not text.startswith("-"):
        return True, False
    # `--name=*.py` keeps its option; a pattern in the name (`--o*`, `-r[f]`) does not.
    name = plain.partition("=")[0]
    return True, not text.startswith("--") or bool(_PATTERN.search(name))


def stack_tilde(raw: str) -> bool:
    """Tell whether an unquoted word holds a tilde prefix bash fills from the directory stack.

    ``~+``, ``~-`` and ``~N`` stand for ``$PWD``, ``$OLDPWD`` and ``dirs`` entries, which
    aimon cannot know; ``~`` and ``~user`` are home folders (``expand_user``). Bash also
    expands them after ``=`` and ``:`` in a word shaped like an assignment.
    """
    starts = [0]
    if assignment := _ASSIGNMENT_WORD.match(raw):
        starts = [0, assignment.end()] + [i + 1 for i, c in enumerate(raw) if c == ":"]
    return any(_STACK_TILDE.match(raw, start) for start in starts)


def has_unusual_characters(text: str) -> bool:
    """Tell whether ``text`` holds control, zero-width, bidi or other format characters."""
    return any(
        unicodedata.category(ch) in {"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"}
        for ch in text
        if ch not in "\t\n"
    )


def unescape(raw: str, *, quoted: bool) -> str:
    """Remove backslash quoting the way bash does outside (or inside) double quotes."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt == "\n":
                pass
            elif not quoted or nxt in '$`"\\':
                out.append(nxt)
            else:
                out.append(ch + nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def decode_ansi_c(body: str) -> str:
    """Decode the escapes of a ``$'...'`` string."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 >= len(body):
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt in _ANSI_C:
            out.append(_ANSI_C[nxt])
            i += 2
        elif nxt == "c" and i + 2 < len(body):
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        elif code := _ANSI_C_CODE.match(body, i + 1):
            digits = code.group()
            value = int(digits, 8) if digits[0].isdigit() else int(digits[1:], 16)
            out.append(chr(min(value, 0x10FFFF)))
            i = code.end()
        else:
            out.append(ch + nxt)
            i += 2
    return "".join(out)
