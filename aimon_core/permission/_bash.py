"""Parse a Bash command with tree-sitter-bash into simple commands and risky constructs.

The walk fails closed: a syntax error, a node type this module does not know, a parse that
runs past its deadline or input that is too large or too deep adds ``"could not parse"`` to
``ParsedCommand.risky``. Commands are still collected on a best-effort basis in that case so
that deny rules keep working. Words are returned after quote removal; a word holding an
expansion is returned as its source text and marks the command ``dynamic``.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from aimon_core.permission._syntax import (
    COULD_NOT_PARSE,
    UNUSUAL_CHARACTERS,
    ParsedCommand,
    Redirect,
    SimpleCommand,
    decode_ansi_c,
    has_unusual_characters,
    pattern_shape,
    stack_tilde,
    unescape,
)

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Tree

_MAX_SOURCE_BYTES = 64 * 1024
_PARSE_SECONDS = 0.5
_MAX_LEVEL = 150
_MAX_REPARSE = 4

_STATEMENTS = frozenset({
    "program", "command", "redirected_statement", "list", "pipeline", "negated_command",
    "subshell", "compound_statement", "if_statement", "while_statement", "for_statement",
    "c_style_for_statement", "case_statement", "function_definition", "test_command",
    "declaration_command", "unset_command", "variable_assignment", "variable_assignments",
})
_CONTROL = frozenset({
    "if_statement", "while_statement", "for_statement", "c_style_for_statement",
    "case_statement",
})
_CONTROL_PARTS = frozenset({"do_group", "elif_clause", "else_clause", "case_item"})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_LITERAL_LEAVES = frozenset({
    "word", "number", "regex", "test_operator", "extglob_pattern", "variable_name",
    "special_variable_name",
})
_TEST_EXPRESSIONS = frozenset({
    "binary_expression", "unary_expression", "parenthesized_expression",
    "ternary_expression", "postfix_expression",
})
_BRACE_EXPANSION = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")
_GLOB = re.compile(r"[*?]|\[.*\]")


@dataclass(frozen=True, slots=True)
class _Piece:
    text: str
    dynamic: bool
    # Source text outside quotes, used to spot brace expansion and globs.
    unquoted: str
    # A file name pattern, and one whose words may be options (`SimpleCommand.globs`).
    glob: bool = False
    option: bool = False


def parse_command(command: str) -> ParsedCommand:
    """Parse ``command`` into simple commands and the risky constructs it uses."""
    return parse_script(command, reparse_budget=_MAX_REPARSE)


# The same command is parsed several times per tool call (the gate's rule match, the
# read-only check, the approval's wording); the result is an immutable value, so one parse
# per command string serves them all. Bounded (oldest out); a failed parse is not kept, so
# a parse that ran out of time on a loaded machine is tried again next time.
_PARSED: dict[tuple[str, int, float], ParsedCommand] = {}
_PARSED_LIMIT = 256
_PARSED_LOCK = threading.Lock()


def parse_script(command: str, *, reparse_budget: int) -> ParsedCommand:
    """Parse ``command``, allowing ``reparse_budget`` nested re-parses of inner scripts."""
    key = (command, reparse_budget, _PARSE_SECONDS)
    parsed = _PARSED.get(key)
    if parsed is not None:
        return parsed
    walker = _Walker(reparse_budget=reparse_budget)
    walker.parse(command)
    parsed = ParsedCommand(commands=tuple(walker.commands), risky=tuple(walker.risky),
                           risky_sources=tuple(walker.sources.items()))
    if "could not parse" not in parsed.risky:
        with _PARSED_LOCK:
            if len(_PARSED) >= _PARSED_LIMIT:
                del _PARSED[next(iter(_PARSED))]
            _PARSED[key] = parsed
    return parsed


@functools.cache
def _language() -> Language:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Language(tree_sitter_bash.language())


def _parse_tree(source: bytes) -> Tree | None:
    import tree_sitter

    # A Parser costs about a microsecond and is not thread-safe, so only the Language is
    # cached; each call (possibly on a worker thread) gets its own parser.
    parser = tree_sitter.Parser(_language())
    deadline = time.monotonic() + _PARSE_SECONDS

    def read(offset: int, _point: object) -> bytes:
        return source[offset : offset + 65536]

    def past_deadline(_offset: int, _has_error: bool) -> bool:
        return time.monotonic() > deadline

    try:
        return parser.parse(read, progress_callback=past_deadline)
    except ValueError:
        return None


class _Walker:
    """Collect simple commands and risky constructs from syntax trees."""

    def __init__(self, *, reparse_budget: int) -> None:
        self.commands: list[SimpleCommand] = []
        self.risky: list[str] = []
        # Where each risky construct is first written, for messages.
        self.sources: dict[str, str] = {}
        self.reparse_budget = reparse_budget
        self.source = b""

    def flag(self, what: str, node: Node | None = None) -> None:
        if what not in self.risky:
            self.risky.append(what)
        if node is not None and what not in self.sources:
            self.sources[what] = self.text(node)

    def parse(self, command: str) -> None:
        if has_unusual_characters(command):
            self.flag(UNUSUAL_CHARACTERS)
        source = command.encode("utf-8", errors="replace")
        tree = _parse_tree(source) if len(source) <= _MAX_SOURCE_BYTES else None
        if tree is None:
            self.flag(COULD_NOT_PARSE)
            return
        outer, self.source = self.source, source
        try:
            if tree.root_node.has_error:
                self.flag(COULD_NOT_PARSE)
            self.statement(tree.root_node, 0)
        except RecursionError:
            self.flag(COULD_NOT_PARSE)
        finally:
            self.source = outer

    def reparse(self, script: str) -> None:
        if self.reparse_budget <= 0:
            self.flag(COULD_NOT_PARSE)
            return
        self.reparse_budget -= 1
        self.parse(script)
        self.reparse_budget += 1

    def text(self, node: Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", errors="replace")

    def statement(self, node: Node, level: int) -> None:
        if level > _MAX_LEVEL:
            self.flag(COULD_NOT_PARSE)
            return
        match node.type:
            case "command":
                self.command(node, (), (), level)
            case "program" | "list" | "pipeline" | "negated_command":
                for child in node.named_children:
                    self.statement(child, level + 1)
            case "redirected_statement":
                self.redirected(node, level)
            case "variable_assignment" | "variable_assignments":
                parts = node.named_children if node.type == "variable_assignments" else [node]
                pieces = [self.assignment(part, level) for part in parts]
                self.commands.append(SimpleCommand(
                    argv=(),
                    assignments=tuple(p.text for p in pieces),
                    dynamic=any(p.dynamic for p in pieces),
                    source=self.text(node),
                ))
            case "subshell":
                self.flag("subshell", node)
                self.mixed(node, level)
            case "compound_statement":
                first = node.child(0)
                self.flag("arithmetic command" if first and first.type == "((" else "brace group",
                          node)
                self.mixed(node, level)
            case "function_definition":
                self.flag("function definition", node)
                self.mixed(node, level)
            case "test_command":
                pieces = self.test_words(node, level)
                self.commands.append(SimpleCommand(
                    argv=tuple(p.text for p in pieces), dynamic=any(p.dynamic for p in pieces),
                    source=self.text(node),
                ))
            case "declaration_command" | "unset_command":
                self.declaration(node, level)
            case "comment":
                pass
            case kind if kind in _CONTROL:
                self.flag("control flow", node)
                self.mixed(node, level)
            case _:
                self.flag(COULD_NOT_PARSE)
                self.scan(node, level)

    def mixed(self, node: Node, level: int) -> None:
        """Walk a compound node whose children are statements, clauses or plain words."""
        for child in node.named_children:
            if child.type in _STATEMENTS:
                self.statement(child, level + 1)
            elif child.type in _CONTROL_PARTS:
                self.mixed(child, level + 1)
            else:
                self.scan(child, level + 1)

    def scan(self, node: Node, level: int) -> None:
        """Find statements and substitutions nested anywhere below ``node``."""
        if level > _MAX_LEVEL:
            self.flag(COULD_NOT_PARSE)
            return
        if node.is_error or node.is_missing:
            self.flag(COULD_NOT_PARSE)
        if node.type in _STATEMENTS:
            self.statement(node, level)
        elif node.type in {"command_substitution", "process_substitution"}:
            self.word(node, level)
        else:
            for child in node.children:
                self.scan(child, level + 1)

    def redirected(self, node: Node, level: int) -> None:
        redirects: list[Redirect] = []
        extra: list[_Piece] = []
        for child in node.children_by_field_name("redirect"):
            self.redirect(child, level, redirects, extra)
        body = node.child_by_field_name("body")
        if body is None:
            self.commands.append(_simple((), extra, redirects, source=self.text(node)))
        elif body.type == "command":
            self.command(body, tuple(redirects), tuple(extra), level)
            # The command is the last one collected (substitutions in it come first).
            self.commands[-1] = replace(self.commands[-1], source=self.text(node))
        else:
            if extra:
                self.flag(COULD_NOT_PARSE)
            start = len(self.commands)
            self.statement(body, level + 1)
            written = " ".join(r.source for r in redirects)
            for i in range(start, len(self.commands)):
                inner = self.commands[i]
                self.commands[i] = replace(inner, redirects=(*inner.redirects, *redirects),
                                           source=f"{inner.source} {written}".strip())

    def command(
        self,
        node: Node,
        outer: tuple[Redirect, ...],
        extra: tuple[_Piece, ...],
        level: int,
    ) -> None:
        assignments: list[_Piece] = []
        words: list[_Piece] = []
        redirects: list[Redirect] = []
        trailing: list[_Piece] = []
        previous_word_end = -1
        for index, child in enumerate(node.children):
            field = node.field_name_for_child(index)
            if child.type == "variable_assignment":
                assignments.append(self.assignment(child, level))
            elif child.type in _REDIRECTS:
                self.redirect(child, level, redirects, trailing)
            elif child.type == "command_name" or field == "argument":
                gap = self.source[previous_word_end : child.start_byte]
                if previous_word_end >= 0 and not gap.replace(b"\\\n", b""):
                    # Bash would join two touching words (`$"x"`, `r\<newline>m`); the
                    # grammar split them, so its argv would be wrong.
                    self.flag(COULD_NOT_PARSE)
                previous_word_end = child.end_byte
                piece = self.word(child, level)
                if child.type == "command_name":
                    self.check_name(piece, node)
                words.append(piece)
            elif child.type != "comment":
                self.flag(COULD_NOT_PARSE)
                self.scan(child, level + 1)
        pieces = (*words, *trailing, *extra)
        simple = _simple(pieces, [], [*redirects, *outer], source=self.text(node))
        self.commands.append(replace(
            simple,
            assignments=tuple(a.text for a in assignments),
            dynamic=simple.dynamic or any(a.dynamic for a in assignments),
            globs=frozenset(i for i, p in enumerate(pieces) if p.glob),
            option_globs=frozenset(i for i, p in enumerate(pieces) if p.option),
        ))

    def check_name(self, piece: _Piece, command: Node) -> None:
        if piece.dynamic:
            self.flag("command name is an expansion", command)
        elif _GLOB.search(piece.unquoted):
            self.flag("command name is a glob", command)
        if piece.text.rsplit("/", 1)[-1] == "eval":
            self.flag("eval", command)

    def redirect(
        self, node: Node, level: int, out: list[Redirect], extra: list[_Piece]
    ) -> None:
        match node.type:
            case "file_redirect":
                fd = node.child_by_field_name("descriptor")
                ops = [self.text(c) for c in node.children if not c.is_named]
                targets = [self.word(d, level) for d in node.children_by_field_name("destination")]
                target = targets[0] if targets else _Piece("", False, "")
                extra.extend(targets[1:])
                out.append(Redirect(
                    op=ops[0] if ops else "?",
                    target=target.text,
                    fd=self.text(fd) if fd else None,
                    dynamic=target.dynamic,
                    glob=target.glob,
                    source=self.text(node),
                ))
            case "herestring_redirect":
                pieces = [self.word(c, level) for c in node.named_children]
                text = " ".join(p.text for p in pieces)
                dynamic = any(p.dynamic for p in pieces)
                out.append(Redirect(op="<<<", target=text, dynamic=dynamic,
                                    source=self.text(node)))
            case "heredoc_redirect":
                self.heredoc(node, level, out, extra)
            case _:
                self.flag(COULD_NOT_PARSE)

    def heredoc(
        self, node: Node, level: int, out: list[Redirect], extra: list[_Piece]
    ) -> None:
        start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
        delimiter = self.text(start) if start else ""
        quoted = any(ch in delimiter for ch in "'\"\\")
        out.append(Redirect(op="<<", target=delimiter))
        for child in node.named_children:
            if child.type in {"heredoc_start", "heredoc_end"}:
                continue
            if child.type == "heredoc_body":
                expands = any(c.type != "heredoc_content" for c in child.named_children)
                if expands and not quoted:
                    self.flag("heredoc with expansion", node)
                    self.scan(child, level + 1)
            elif child.type in _REDIRECTS:
                self.redirect(child, level, out, extra)
            elif child.type in _STATEMENTS:
                # The grammar hangs the rest of the line (`| cmd`, `&& cmd`) off the heredoc.
                self.statement(child, level + 1)
            else:
                self.flag(COULD_NOT_PARSE)
                self.scan(child, level + 1)

    def assignment(self, node: Node, level: int) -> _Piece:
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        ops = [self.text(c) for c in node.children if not c.is_named]
        piece = self.word(value, level) if value else _Piece("", False, "")
        # An array value or a subscripted name (`a[$(id)]=1`) is evaluated by bash.
        dynamic = piece.dynamic or (name is not None and name.type != "variable_name")
        dynamic = dynamic or (value is not None and value.type == "array")
        if name is not None and name.type != "variable_name":
            self.scan(name, level + 1)
        name_text = self.text(name) if name else ""
        return _Piece(f"{name_text}{ops[0] if ops else '='}{piece.text}", dynamic, "")

    def declaration(self, node: Node, level: int) -> None:
        pieces: list[_Piece] = []
        for child in node.children:
            if not child.is_named:
                pieces.append(_Piece(self.text(child), False, ""))
            elif child.type == "variable_assignment":
                pieces.append(self.assignment(child, level))
            else:
                pieces.append(self.word(child, level))
        self.commands.append(_simple(pieces, [], [], source=self.text(node)))

    def test_words(self, node: Node, level: int) -> list[_Piece]:
        pieces: list[_Piece] = []
        for child in node.children:
            if child.type in _TEST_EXPRESSIONS:
                pieces.extend(self.test_words(child, level + 1))
            elif not child.is_named:
                pieces.append(_Piece(self.text(child), False, ""))
            else:
                pieces.append(self.word(child, level + 1))
        return pieces

    def word(self, node: Node, level: int) -> _Piece:
        """Return the value of one word after quote removal."""
        text = self.text(node)
        if level > _MAX_LEVEL:
            self.flag(COULD_NOT_PARSE)
            return _Piece(text, True, "")
        match node.type:
            case kind if kind in _LITERAL_LEAVES:
                # Brace expansion and `~+`/`~-` are known only when bash runs the command.
                dynamic = kind == "word" and (
                    bool(_BRACE_EXPANSION.search(text)) or stack_tilde(text))
                return _unquoted(unescape(text, quoted=False), dynamic, text)
            case "raw_string":
                return _Piece(text[1:-1], False, "''")
            case "ansi_c_string":
                # Escapes are decoded for deny rules, but bash's reading of them (a NUL ends
                # the word, `\c`, out-of-range codes) is not proven here: unknown, so it asks.
                return _Piece(decode_ansi_c(text[2:-1]), "\\" in text, "''")
            case "string":
                return self.joined(node, level, quoted=True)
            case "concatenation" | "command_name":
                piece = self.joined(node, level, quoted=False)
                dynamic = piece.dynamic or bool(_BRACE_EXPANSION.search(piece.unquoted))
                return _unquoted(piece.text, dynamic, piece.unquoted)
            case "simple_expansion" | "expansion" | "arithmetic_expansion" | "brace_expression":
                for child in node.children:
                    self.scan(child, level + 1)
                return _Piece(text, True, "$")
            case "command_substitution" | "process_substitution":
                self.substitution(node, level)
                return _Piece(text, True, "$")
            case _:
                self.flag(COULD_NOT_PARSE)
                self.scan(node, level + 1)
                return _Piece(text, True, "$")

    def joined(self, node: Node, level: int, *, quoted: bool) -> _Piece:
        texts: list[str] = []
        raw: list[str] = []
        dynamic = False
        for child in node.children:
            if not child.is_named:
                token = self.text(child)
                if token == '"' and quoted:
                    continue
                if token != "$":
                    self.flag(COULD_NOT_PARSE)
                texts.append(token)
                raw.append("''" if quoted else token)
            elif child.type == "string_content":
                texts.append(unescape(self.text(child), quoted=True))
                raw.append("''")
            else:
                piece = self.word(child, level + 1)
                texts.append(piece.text)
                raw.append("''" if quoted else piece.unquoted)
                dynamic = dynamic or piece.dynamic
        return _Piece("".join(texts), dynamic, "".join(raw))

    def substitution(self, node: Node, level: int) -> None:
        kind = "command" if node.type == "command_substitution" else "process"
        self.flag(f"{kind} substitution", node)
        text = self.text(node)
        if text.startswith("`") and "\\" in text:
            # Inside backticks a backslash quotes `$`, `` ` `` and `\`; re-read the script.
            self.reparse(re.sub(r"\\([$`\\])", r"\1", text[1:-1]))
            return
        for child in node.named_children:
            if child.type in _REDIRECTS:
                redirects: list[Redirect] = []
                extra: list[_Piece] = []
                self.redirect(child, level, redirects, extra)
                self.commands.append(_simple(extra, [], redirects, source=self.text(child)))
            else:
                self.statement(child, level + 1)


def _unquoted(text: str, dynamic: bool, raw: str) -> _Piece:
    """Return an unquoted word (or one with unquoted parts), marking a file name pattern."""
    glob, option = pattern_shape(raw, text)
    return _Piece(text, dynamic, raw, glob=glob, option=option)


def _simple(
    words: tuple[_Piece, ...] | list[_Piece], assignments: list[_Piece], redirects: list[Redirect],
    *, source: str = "",
) -> SimpleCommand:
    return SimpleCommand(
        argv=tuple(w.text for w in words),
        assignments=tuple(a.text for a in assignments),
        redirects=tuple(redirects),
        dynamic=any(w.dynamic for w in words) or any(r.dynamic for r in redirects),
        source=source,
    )
