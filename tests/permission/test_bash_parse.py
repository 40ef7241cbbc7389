"""What parse_command makes of each shape of Bash: argv, redirects and risky constructs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from aimon_core.permission import ParsedCommand, Redirect, SimpleCommand, _bash, parse_command


def argvs(parsed: ParsedCommand) -> list[tuple[str, ...]]:
    return [c.argv for c in parsed.commands]


def test_simple_command() -> None:
    assert parse_command("git status --short") == ParsedCommand(
        commands=(SimpleCommand(argv=("git", "status", "--short")),), risky=()
    )


def test_every_operator_splits_commands() -> None:
    parsed = parse_command("a 1 && b || c; d | e |& f & g\nh")
    assert argvs(parsed) == [("a", "1"), ("b",), ("c",), ("d",), ("e",), ("f",), ("g",), ("h",)]
    assert parsed.risky == ()


def test_quote_removal() -> None:
    parsed = parse_command("r''m \"a b\" 'c d' \\e f\\ g \"x\\\"y\" $'A' \"\\q\"")
    assert argvs(parsed) == [("rm", "a b", "c d", "e", "f g", 'x"y', "A", "\\q")]
    assert not parsed.commands[0].dynamic


def test_ansi_c_escapes_are_decoded_but_unknown() -> None:
    # Deny rules see the decoded word; bash's own reading of escapes (a NUL ends the word)
    # is not proven, so the word counts as an expansion and the command asks.
    parsed = parse_command("rm $'\\x41\\n' $'a\\0b'")
    assert argvs(parsed) == [("rm", "A\n", "a\x00b")]
    assert parsed.commands[0].dynamic


def test_assignments_are_split_off() -> None:
    (command,) = parse_command("FOO=bar BAZ+=1 ls -l").commands
    assert command == SimpleCommand(argv=("ls", "-l"), assignments=("FOO=bar", "BAZ+=1"))


def test_redirects() -> None:
    (command,) = parse_command("cmd > out.txt 2>&1 < in.txt >> log &> all 2>/dev/null").commands
    assert command.argv == ("cmd",)
    assert command.redirects == (
        Redirect(op=">", target="out.txt"),
        Redirect(op=">&", target="1", fd="2"),
        Redirect(op="<", target="in.txt"),
        Redirect(op=">>", target="log"),
        Redirect(op="&>", target="all"),
        Redirect(op=">", target="/dev/null", fd="2"),
    )


def test_words_after_a_redirect_are_arguments() -> None:
    (command,) = parse_command("rm > /dev/null -rf /").commands
    assert command.argv == ("rm", "-rf", "/")
    assert command.redirects == (Redirect(op=">", target="/dev/null"),)


def test_command_substitution_collects_inner_commands() -> None:
    parsed = parse_command('echo "today: $(date +%F)" `whoami`')
    assert sorted(argvs(parsed)) == [
        ("date", "+%F"), ("echo", "today: $(date +%F)", "`whoami`"), ("whoami",),
    ]
    assert parsed.risky == ("command substitution",)
    echo = next(c for c in parsed.commands if c.argv[0] == "echo")
    assert echo.dynamic


def test_nested_backticks_are_reparsed() -> None:
    parsed = parse_command("echo `echo \\`rm -rf /\\``")
    assert ("rm", "-rf", "/") in argvs(parsed)


def test_process_substitution() -> None:
    parsed = parse_command("diff <(ls a) <(ls b)")
    assert sorted(argvs(parsed)) == [("diff", "<(ls a)", "<(ls b)"), ("ls", "a"), ("ls", "b")]
    assert parsed.risky == ("process substitution",)


def test_subshell_and_brace_group() -> None:
    parsed = parse_command("(cd sub && make); { pwd; } > out")
    assert argvs(parsed) == [("cd", "sub"), ("make",), ("pwd",)]
    assert parsed.risky == ("subshell", "brace group")
    assert parsed.commands[2].redirects == (Redirect(op=">", target="out"),)


def test_control_flow_and_functions() -> None:
    parsed = parse_command(
        'for f in $(ls); do cat "$f"; done; if true; then rm x; fi; g() { id; }'
    )
    assert {("ls",), ("true",), ("rm", "x"), ("id",)} <= set(argvs(parsed))
    assert {"control flow", "command substitution", "function definition"} <= set(parsed.risky)


def test_heredoc_with_and_without_expansion() -> None:
    plain = parse_command("cat <<'EOF'\n$(rm -rf /)\nEOF")
    assert argvs(plain) == [("cat",)]
    assert plain.risky == ()
    expanding = parse_command("cat <<EOF\nhi $(id)\nEOF")
    assert ("id",) in argvs(expanding)
    assert set(expanding.risky) == {"heredoc with expansion", "command substitution"}


def test_heredoc_followed_by_a_pipe() -> None:
    parsed = parse_command("cat <<EOF | grep b\na\nb\nEOF")
    assert sorted(argvs(parsed)) == [("cat",), ("grep", "b")]


def test_command_name_expansions() -> None:
    assert "command name is an expansion" in parse_command("$CMD -rf /").risky
    assert "command name is an expansion" in parse_command("${X:-rm} -rf /").risky
    assert "command name is a glob" in parse_command("/bin/r? x").risky
    assert parse_command("[ -f x ]").risky == ()


def test_eval_and_inline_scripts() -> None:
    assert parse_command("eval 'ls'").risky == ("eval",)
    # The parser keeps `bash -c` scripts as words; the matcher parses them again.
    assert argvs(parse_command("bash -c 'rm x'")) == [("bash", "-c", "rm x")]


def test_brace_expansion_is_dynamic() -> None:
    (command,) = parse_command("ls {a,b}.txt").commands
    assert command.dynamic


def test_parse_errors_fail_closed() -> None:
    for command in ('echo "unterminated', "ls $(", "git status )", "ls 1<>f", 'echo $"x"'):
        assert "could not parse" in parse_command(command).risky, command


def test_errors_still_collect_what_they_can() -> None:
    parsed = parse_command("rm -rf / ; ls )")
    assert ("rm", "-rf", "/") in argvs(parsed)
    assert "could not parse" in parsed.risky


def test_too_large_or_too_deep_fails_closed() -> None:
    assert "could not parse" in parse_command("echo " + "a" * 70_000).risky
    deep = "echo " + "$(" * 300 + "ls" + ")" * 300
    assert "could not parse" in parse_command(deep).risky


def test_parse_past_its_deadline_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    long_command = "ls; " * 3000
    assert parse_command(long_command).risky == ()
    monkeypatch.setattr(_bash, "_PARSE_SECONDS", 0.0)
    assert parse_command(long_command) == ParsedCommand(commands=(), risky=("could not parse",))


def test_line_continuation_joining_words_fails_closed() -> None:
    assert "could not parse" in parse_command("r\\\nm -rf /").risky
    assert argvs(parse_command("git status \\\n  --short")) == [("git", "status", "--short")]


def test_unusual_characters() -> None:
    for text in ("ls\u200b", "ls \u202e", "ls\r", "ls \x1b[2K", "ls\x00"):
        assert "unusual characters" in parse_command(text).risky, repr(text)
    assert parse_command("echo héllo").risky == ()


def test_import_is_lazy() -> None:
    code = (
        "import sys, aimon_core.permission as p; "
        "assert 'tree_sitter' not in sys.modules; "
        "p.parse_command('ls'); assert 'tree_sitter' in sys.modules"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=root)


@pytest.mark.parametrize(("command", "globs", "options"), [
    ("ls *", {1}, {1}),
    ("ls ./* src/*.py", {1, 2}, set()),
    ("ls '*' \\* \"a\"*", {3}, set()),
    ("ls [ab].txt ?.txt --include=*.py", {1, 2, 3}, {1, 2}),
    ("ls -r[f] --o*=x --x=*", {1, 2, 3}, {1, 2}),
    ("ls -- *", {2}, {2}),
    ("find . -name '*.py'", set(), set()),
    ("[ -f * ]", set(), set()),
])
def test_file_name_patterns_are_marked(command: str, globs: set[int], options: set[int]) -> None:
    (simple,) = parse_command(command).commands
    assert simple.globs == globs
    assert simple.option_globs == options


@pytest.mark.parametrize(("command", "dynamic"), [
    ("cat ~+/a", True), ("cat ~-", True), ("cat ~2/a", True), ("cat ~-1", True),
    ("cat x=~-/a", True), ("cat x=a:~+", True), ("cat < ~+/a", True),
    ("cat ~/a", False), ("cat ~root/a", False), ("cat '~+'", False), ("cat a~+", False),
    ("cat --x=~-", False),
])
def test_tilde_from_the_directory_stack_is_an_expansion(command: str, dynamic: bool) -> None:
    (simple,) = parse_command(command).commands
    assert (simple.dynamic or any(r.dynamic for r in simple.redirects)) is dynamic
