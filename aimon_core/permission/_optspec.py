"""Parse a program's arguments the way getopt_long does, against an allowlist of options.

A spec lists the options a program may be given and still be read-only (``allowed``), the ones
that run programs or write files (``dangerous``: escape hatches that a broad allow rule does not
cover) and the ones that change state the program owns (``mutating``: not read-only, but what a
rule such as ``Bash(git:*)`` means to allow). The parser follows GNU getopt_long: short options
cluster (``-no``) and take attached values (``-ofile``), long options take ``--opt=value`` or the
next argument, an unambiguous prefix of a long option stands for it, options may follow operands,
and ``--`` ends the options. Anything the spec does not know makes the command not read-only.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Sequence
from dataclasses import dataclass


class Arity(enum.Enum):
    """Whether an option takes a value: never, always, or only when attached."""

    NONE = "none"
    REQUIRED = "required"
    OPTIONAL = "optional"


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """One option, ``-o`` or ``--output``, and whether it takes a value."""

    name: str
    arity: Arity

    @property
    def is_long(self) -> bool:
        """Tell whether this is a ``--long`` option."""
        return self.name.startswith("--")


def options(text: str) -> tuple[Option, ...]:
    """Read ``"-n -k= --key= --color?"``: ``=`` takes a value, ``?`` an attached one only."""
    out: list[Option] = []
    for word in text.split():
        if word.endswith("="):
            out.append(Option(name=word[:-1], arity=Arity.REQUIRED))
        elif word.endswith("?"):
            out.append(Option(name=word[:-1], arity=Arity.OPTIONAL))
        else:
            out.append(Option(name=word, arity=Arity.NONE))
    return tuple(out)


# Compared by identity: specs are table constants, and hashing one field by field on every
# lookup of its index cost ~1 ms per git command (measured with bench/bench_matcher.py).
@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class OptionSpec:
    """What a program's argument list may hold and still be read-only.

    Args:
        abbreviations: long options match by unambiguous prefix (GNU getopt_long, git).
        permute: options may follow operands (GNU); otherwise the first operand ends them.
        clusters: short options combine (``-la``) and take attached values (``-n5``).
        digits: ``-NUM`` is a count (``head -20``, ``grep -3``).
    """

    allowed: tuple[Option, ...] = ()
    dangerous: tuple[Option, ...] = ()
    mutating: tuple[Option, ...] = ()
    abbreviations: bool = True
    permute: bool = True
    clusters: bool = True
    digits: bool = False
    max_operands: int | None = None


class Role(enum.Enum):
    """What one argument is to the program: an option, an option's value, an operand, ...."""

    OPTION = "option"
    VALUE = "value"  # the value of the option before it, a word of its own
    OPERAND = "operand"  # an operand where options may still follow
    END = "end"  # the `--` that ends the options
    LAST = "last"  # an operand after the options ended: never read as an option


@dataclass(frozen=True, slots=True, kw_only=True)
class Parsed:
    """Options (canonical name, value) and operands of an argument list the spec allows.

    ``roles`` says what each argument was, in order.
    """

    options: tuple[tuple[str, str | None], ...]
    operands: tuple[str, ...]
    roles: tuple[Role, ...] = ()

    def has(self, *names: str) -> bool:
        """Tell whether any of ``names`` was given."""
        return any(name in names for name, _ in self.options)


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """Why an argument list is not read-only; ``index`` counts from the first argument."""

    index: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class _Index:
    allowed: dict[str, Option]
    known: dict[str, Option]
    dangerous: frozenset[str]
    longs: tuple[str, ...]


@functools.lru_cache(maxsize=512)
def _index(spec: OptionSpec) -> _Index:
    everything = spec.allowed + spec.dangerous + spec.mutating
    return _Index(
        allowed={o.name: o for o in spec.allowed},
        known={o.name: o for o in everything},
        dangerous=frozenset(o.name for o in spec.dangerous),
        longs=tuple(o.name for o in everything if o.is_long),
    )


def resolve_long(spec: OptionSpec, name: str) -> tuple[str, ...]:
    """Return every known long option ``name`` may stand for (exact match wins)."""
    index = _index(spec)
    if name in index.known:
        return (name,)
    if not spec.abbreviations:
        return ()
    return tuple(n for n in index.longs if n.startswith(name))


def parse_args(spec: OptionSpec, args: Sequence[str]) -> Parsed | Refused:
    """Parse ``args`` (without the program name) the way the program would, or refuse."""
    found: list[tuple[str, str | None]] = []
    operands: list[str] = []
    roles: list[Role] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            operands.extend(args[i + 1 :])
            roles += [Role.END] + [Role.LAST] * (len(args) - i - 1)
            break
        if not arg.startswith("-") or arg == "-":
            if not spec.permute:
                operands.extend(args[i:])
                roles += [Role.LAST] * (len(args) - i)
                break
            operands.append(arg)
            roles.append(Role.OPERAND)
            i += 1
            continue
        step = _parse_long(spec, args, i) if arg.startswith("--") else _parse_short(spec, args, i)
        if isinstance(step, Refused):
            return step
        taken, used = step
        found.extend(taken)
        roles += [Role.OPTION] + [Role.VALUE] * (used - 1)
        i += used
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return Refused(index=len(args) - 1, reason="takes more operands than a read-only use")
    return Parsed(options=tuple(found), operands=tuple(operands), roles=tuple(roles))


_Step = tuple[list[tuple[str, str | None]], int] | Refused


def _parse_long(spec: OptionSpec, args: Sequence[str], i: int) -> _Step:
    name, equals, value = args[i].partition("=")
    matches = resolve_long(spec, name)
    if len(matches) != 1:
        why = "is ambiguous" if matches else "is not known to be read-only"
        return Refused(index=i, reason=f"option {name!r} {why}")
    option = _index(spec).allowed.get(matches[0])
    if option is None:
        return Refused(index=i, reason=f"option {matches[0]!r} is not read-only")
    match option.arity:
        case Arity.NONE if equals:
            return Refused(index=i, reason=f"option {option.name!r} takes no value")
        case Arity.NONE | Arity.OPTIONAL:
            return [(option.name, value if equals else None)], 1
        case Arity.REQUIRED if equals:
            return [(option.name, value)], 1
        case _ if i + 1 < len(args):
            return [(option.name, args[i + 1])], 2
        case _:
            return Refused(index=i, reason=f"option {option.name!r} needs a value")


def _parse_short(spec: OptionSpec, args: Sequence[str], i: int) -> _Step:
    arg = args[i]
    if not spec.clusters and len(arg) != 2:
        return Refused(index=i, reason=f"{arg!r} is not a form known to be read-only")
    allowed = _index(spec).allowed
    taken: list[tuple[str, str | None]] = []
    for position in range(1, len(arg)):
        letter = arg[position]
        if spec.digits and letter.isdigit():
            taken.append(("-NUM", letter))
            continue
        option = allowed.get("-" + letter)
        if option is None:
            return Refused(index=i, reason=f"option -{letter} is not known to be read-only")
        rest = arg[position + 1 :]
        match option.arity:
            case Arity.NONE:
                taken.append((option.name, None))
            case Arity.OPTIONAL:
                return [*taken, (option.name, rest or None)], 1
            case Arity.REQUIRED if rest:
                return [*taken, (option.name, rest)], 1
            case Arity.REQUIRED if i + 1 < len(args):
                return [*taken, (option.name, args[i + 1])], 2
            case _:
                return Refused(index=i, reason=f"option {option.name!r} needs a value")
    return taken, 1


def dangerous_at(spec: OptionSpec, args: Sequence[str]) -> tuple[tuple[int, str], ...]:
    """Return (index, option) for each argument that may spell a dangerous option.

    Unlike :func:`parse_args` this trusts nothing it would have to get exactly right: every
    argument is looked at, including one that may be the value of the option before it and
    those after ``--`` (which may itself be a value: ``sort -t -- -o x``). A file named like
    a dangerous option is the only price.
    """
    if not _index(spec).dangerous:
        return ()
    hits: list[tuple[int, str]] = []
    for i, arg in enumerate(args):
        if not arg.startswith("-") or arg in {"-", "--"}:
            continue
        hit = _long_danger(spec, arg) if arg.startswith("--") else _short_danger(spec, arg)
        if hit:
            hits.append((i, hit))
    return tuple(hits)


def _long_danger(spec: OptionSpec, arg: str) -> str:
    index = _index(spec)
    name = arg.partition("=")[0]
    if name in index.known:
        return name if name in index.dangerous else ""
    # Any prefix of a dangerous option counts, even an ambiguous one: never one release behind.
    for danger in sorted(index.dangerous):
        if danger.startswith("--") and danger.startswith(name):
            return danger
    return ""


def _short_danger(spec: OptionSpec, arg: str) -> str:
    """Return the dangerous option in a short cluster, or "" (a known value ends the scan)."""
    index = _index(spec)
    for position in range(1, len(arg)):
        name = "-" + arg[position]
        if name in index.dangerous:
            return name
        option = index.known.get(name)
        if option is not None and option.arity is not Arity.NONE:
            return ""  # the rest of the cluster is this option's value
    return ""
