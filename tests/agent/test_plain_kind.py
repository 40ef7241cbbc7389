"""Frontmatter's plain values are read as PyYAML reads them, without importing PyYAML."""

from __future__ import annotations

import itertools
import string
import subprocess
import sys

import yaml

from aimon_core.agent._definition import parse_frontmatter, plain_kind

_TAGS = {"tag:yaml.org,2002:str": "str", "tag:yaml.org,2002:bool": "bool",
         "tag:yaml.org,2002:null": "null", "tag:yaml.org,2002:int": "int"}


def _values() -> list[str]:
    """Plain scalars of every first character and of every implicit YAML type's spellings."""
    words = ["yes", "no", "true", "false", "on", "off", "null", "y", "n", "nope", "onwards",
             "offline", "Truex", "tRUE", "NUll", "nan", "inf", "Review code", "fix: it"]
    cased = [v for w in words for v in {w, w.upper(), w.capitalize(), w.title()}]
    numbers = ["0", "7", "10", "012", "0o7", "0x1F", "0b101", "1_000", "1:30", "190:20:30",
               "-1", "+3", "1.5", "-.5", ".5", "1e3", "1.0e+3", ".inf", "-.Inf", ".NaN",
               "2026-11-30", "2026-11-30T14:05:00Z", "2026-1-3 1:2:3", "5 apples",
               "3.x", "1.2.3", "0.1.0-beta", "=", "<<", "<html>", "~", "~home", "-", "-x",
               "+", ".", ".hidden", "..", "1st place", "0day", "100%"]
    firsts = [c + rest for c in string.printable.strip() + "éß中"
              for rest in ("", "a", "1", " b")]
    return cased + numbers + firsts + ["".join(p) for p in itertools.product("tyo1.-", repeat=2)]


def test_plain_kind_agrees_with_pyyaml_wherever_it_answers() -> None:
    resolver = yaml.resolver.Resolver()
    answered = 0
    for value in _values():
        kind = plain_kind(value)
        if kind is None:
            continue
        answered += 1
        tag = resolver.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
        assert kind == _TAGS.get(tag, tag), value
    assert answered > 300  # it decides the common values, not only the easy few


def test_plain_kind_leaves_floats_timestamps_and_odd_ints_to_pyyaml() -> None:
    for value in ("1.5", ".inf", "2026-11-30", "012", "0x1F", "1_000", "1:30", "<<", "="):
        assert plain_kind(value) is None, value


def test_simple_frontmatter_reads_as_pyyaml_reads_it() -> None:
    front = ("name: reviewer\ndescription: Reviews code. Use after edits\nmodel: inherit\n"
             "maxTurns: 12\nbackground: false\ncolor: ~\ntools:\n  - Read\n  - Grep\n")
    fields, _, warnings = parse_frontmatter(f"---\n{front}---\nbody\n", "agent.md")
    assert fields == yaml.safe_load(front) | {"color": fields.get("color")}
    assert warnings == ()


def test_reading_simple_frontmatter_imports_no_yaml() -> None:
    code = ("import sys\nfrom aimon_core.agent._definition import parse_frontmatter\n"
            "text = '---\\nname: a\\ndescription: Does b. Use when c\\nmaxTurns: 3\\n"
            "tools: Read, Grep\\n---\\nbody\\n'\n"
            "assert parse_frontmatter(text, 'x')[0]['maxTurns'] == 3\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('yaml', 'frontmatter')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "[]"
