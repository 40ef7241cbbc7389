"""The fast root-command parser agrees with the Typer app, and keeps Typer off the print path.

`parse_fast` may decline any command line (Typer then parses it); whatever it accepts must
give exactly the RootArgs the Typer app gives. The command lines are generated from
`ROOT_OPTIONS`, so a new option is covered by adding it to the table.
"""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import typer.main
from typer.core import TyperCommand, TyperOption

from aimon_cli._args import (
    ROOT_OPTIONS,
    ArgsError,
    RootArgs,
    RootOption,
    Takes,
    _pick_alone,
    parse_fast,
    parse_root,
    parse_with_typer,
)
from aimon_cli._root_app import root_app

VALUES = ("x", "", "a b", "-x", "--", "json", "stream-json", "TEXT", "0", "3", "007", "-1",
          "1_0", " 2", "Bash(git:*),Edit")
POSITIONAL = ("hello", "", "-", "--", "-5", "/help", "--help", "-h", "--nope", "-z", "two words")
COMMON = (
    ["-p", "fix the bug"],
    ["--print", "fix", "--output-format", "json"],
    ["-p", "x", "--output-format=stream-json", "--model", "m", "--provider", "openai"],
    ["--provider", "anthropic", "--model", "claude", "-p", "go", "--allowed-tools", "Edit Bash"],
    ["-p", "go", "--allowed-tools", "Edit", "--allowed-tools=Bash(git:*)",
     "--disallowed-tools", "Bash(rm:*)"],
    ["-p", "go on", "-r", "20261130-120000-abcdef"],
    ["-p", "go", "-c", "--max-iterations", "5", "--permission-mode", "plan"],
    ["-p", "go", "--agent", "reviewer", "--base-url", "http://localhost:11434/v1"],
    ["-pc", "go"], ["-mclaude", "-p", "x"], ["-r"], ["-r", "-p", "x"], ["--resume"],
    ["hello", "-p"], ["-p", "--", "-x"], ["-v"], ["--version", "-p"], ["-p", ""],
)


@pytest.fixture(scope="module")
def typer_parse() -> Callable[[list[str]], RootArgs | str]:
    """Parse with the Typer app's click command (built once): RootArgs, or 'error'/'exit'."""
    taken: list[RootArgs] = []
    command = typer.main.get_command(root_app(taken.append))

    def parse(args: list[str]) -> RootArgs | str:
        taken.clear()
        try:
            command.main(args, prog_name="aimon", standalone_mode=False)
        except typer.Exit:
            return "exit"
        except Exception:  # click's usage errors
            return "error"
        return taken[0] if taken else "exit"

    return parse


def _option_items(option: RootOption) -> Iterator[list[str]]:
    """Every way to spell `option`: each name, with values attached or following."""
    for flag in option.flags:
        if option.takes is Takes.NOTHING:
            yield [flag]
            yield [f"{flag}=x"]
            continue
        yield [flag]  # its value missing, or taken from what follows
        for value in VALUES:
            yield [flag, value]
            yield [f"{flag}={value}"] if flag.startswith("--") else [f"{flag}{value}"]


def _items() -> list[list[str]]:
    items = [item for option in ROOT_OPTIONS for item in _option_items(option)]
    shorts = [o.flags[0][1] for o in ROOT_OPTIONS if len(o.flags[0]) == 2]
    items += [[f"-{a}{b}"] for a in shorts for b in shorts] + [["-pmfoo"], ["-cr", "x"]]
    return items + [[p] for p in POSITIONAL]


def _command_lines(count: int, seed: int) -> Iterator[list[str]]:
    items = _items()
    yield from items
    rng = random.Random(seed)
    for _ in range(count):
        yield [arg for _ in range(rng.randint(2, 5)) for arg in rng.choice(items)]


def test_the_table_is_the_typer_apps_options() -> None:
    command = typer.main.get_command(root_app(lambda _args: None))
    assert isinstance(command, TyperCommand)
    declared = {p.name: p for p in command.params if isinstance(p, TyperOption)}
    assert set(declared) == {o.dest for o in ROOT_OPTIONS}
    for option in ROOT_OPTIONS:
        param = declared[option.dest]
        assert tuple(param.opts + param.secondary_opts) == option.flags
        assert param.is_flag == (option.takes is Takes.NOTHING)
        assert param.multiple == (option.takes is Takes.TEXTS)
        assert param.hidden == option.hidden
        assert param.min == option.minimum
        annotation: Any = param.type_descriptor.annotation
        match option.takes:
            case Takes.NOTHING:
                assert annotation is bool
            case Takes.TEXT:
                assert annotation is str
            case Takes.TEXTS:
                assert annotation == list[str]
            case Takes.COUNT:
                assert annotation is int
            case Takes.CHOICE:
                assert tuple(v.value for v in annotation) == option.choices
    assert set(RootArgs.__dataclass_fields__) == {*declared, "prompt"}


def test_fast_parse_equals_typer_on_generated_command_lines(
        typer_parse: Callable[[list[str]], RootArgs | str]) -> None:
    accepted = 0
    for args in _command_lines(count=700, seed=13):
        spelled = _pick_alone(args)
        fast = parse_fast(spelled)
        if fast is not None:
            accepted += 1
            assert typer_parse(spelled) == fast, args
    assert accepted > 200  # it takes the usual spellings, not only the trivial ones


def test_fast_parse_takes_the_common_command_lines(
        typer_parse: Callable[[list[str]], RootArgs | str]) -> None:
    for args in COMMON:
        spelled = _pick_alone(args)
        fast = parse_fast(spelled)
        assert fast is not None, args
        assert fast == typer_parse(spelled), args


def test_help_and_mistakes_go_to_typer(capsys: pytest.CaptureFixture[str]) -> None:
    assert parse_root(["--help"]) == 0
    assert "--output-format" in capsys.readouterr().out
    for wrong in (["--nope"], ["-p", "--max-iterations", "0"], ["-c", "-r", "x"], ["a", "b"],
                  ["--output-format", "yaml"], ["--model"], ["--print=yes"]):
        assert parse_fast(_pick_alone(wrong)) is None
        with pytest.raises(ArgsError):
            parse_root(wrong)
    assert parse_with_typer(["-p", "x"]) == parse_root(["-p", "x"])


def test_print_mode_command_lines_do_not_import_typer() -> None:
    code = ("import sys; from aimon_cli._args import parse_root; "
            "parse_root(['-p', 'x', '--model', 'm', '--output-format', 'json', "
            "'--allowed-tools', 'Edit', '-r', 'abc', '--max-iterations', '3']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'click')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
