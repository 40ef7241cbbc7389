"""Match file paths against path rules such as ``Read(/tmp/**)`` or ``Edit(src/**)``.

Glob syntax: ``*`` and ``?`` stay inside one path segment, ``**`` crosses segments
(``a/**/b`` also matches ``a/b``; a trailing ``/**`` also matches the directory itself),
``[...]`` is a character class, a trailing ``/`` means ``/**``.

Where a pattern is anchored:

- ``//abs/path`` is absolute, ``~/x`` is under the home directory;
- ``x``, ``./x`` and ``**/x`` are relative to the project root (not the shell's cwd);
- ``/x`` is absolute when its first segment exists at the filesystem root (``/tmp/**``,
  ``/etc/**``), otherwise relative to the project root (``/src/**``). Deny and ask rules
  take both readings, and a pattern starting with ``**/`` matches at any depth anywhere.

The target path is expanded (``~``), joined to ``cwd`` (or the project root) and resolved
with ``os.path.realpath`` before matching, so ``src/../../etc/passwd`` and symlinks pointing
out of ``src`` do not match ``Edit(src/**)``. An allow rule must match the resolved path. A
deny or ask rule matches the resolved or the merely normalised path, or any parent
directory of either, so ``Read(secrets)`` also covers ``secrets/key``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from aimon_core.permission._credentials import credential_reason
from aimon_core.permission._rules import (
    EDIT_TOOLS,
    PATH_TOOLS,
    READ_TOOLS,
    Decision,
    PermissionRules,
    Rule,
    Verdict,
    describe,
    governs,
)
from aimon_core.permission._spelling import clean, expand_user, with_parents

GLOB_CHARS = frozenset("*?[")
CREDENTIALS = "credential files"
"""The `Decision.rule` of a call that reads a credential file (no settings rule names it)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Anchored:
    """A glob below a literal directory prefix."""

    prefix: str
    glob: str


def evaluate_path(
    tool: str,
    path: str,
    rules: PermissionRules,
    *,
    project_root: Path,
    cwd: Path | None = None,
) -> Decision:
    """Decide whether ``tool`` may touch ``path``; ASK when no rule allows it."""
    if "\x00" in path:
        return Decision(verdict=Verdict.DENY, reason="path contains a NUL byte")
    root = clean(os.path.realpath(project_root))
    joined = str(Path(cwd or project_root).absolute() / expand_user(path))
    lexical = clean(os.path.normpath(joined))
    real = clean(os.path.realpath(joined))
    broad_targets = {*with_parents(lexical), *with_parents(real)}
    for verdict, group in ((Verdict.DENY, rules.deny), (Verdict.ASK, rules.ask)):
        for rule in group:
            if _applies(rule, tool) and (
                rule.specifier is None
                or any(_matches(rule.specifier, t, root, broad=True) for t in broad_targets)
            ):
                return Decision(verdict=verdict, reason=describe(verdict, rule), rule=rule.text)
    credential = credential_reason(path, Path(cwd or project_root)) if (
        tool in READ_TOOLS or tool in EDIT_TOOLS) else None
    if credential is not None:
        # Like an ask rule: neither allow rules nor remembered approvals answer for it.
        return Decision(verdict=Verdict.ASK, rule=CREDENTIALS, reason=(
            f"{real} is part of {credential}; using credential files always asks"))
    for rule in rules.allow:
        if _applies(rule, tool) and (
            rule.specifier is None or _matches(rule.specifier, real, root, broad=False)
        ):
            return Decision(verdict=Verdict.ALLOW, reason=describe(Verdict.ALLOW, rule),
                            rule=rule.text)
    return Decision(verdict=Verdict.ASK, reason=f"no rule allows {tool} on {real}")


def _applies(rule: Rule, tool: str) -> bool:
    if not governs(rule.tool, tool):
        return False
    return rule.specifier is None or rule.tool in PATH_TOOLS


def _matches(specifier: str, target: str, root: str, *, broad: bool) -> bool:
    return any(
        regex.fullmatch(target) for regex in compiled(specifier, root, broad)
    )


def compiled(specifier: str, root: str, broad: bool) -> tuple[re.Pattern[str], ...]:
    # Not cached: anchoring and resolution read the filesystem, which may change.
    anchored = anchor(specifier, root, broad=broad)
    variants = [*anchored, *filter(None, map(_resolved_variant, anchored))]
    return tuple(
        re.compile(re.escape(a.prefix) + glob_to_regex(a.glob)) for a in dict.fromkeys(variants)
    )


def anchor(specifier: str, root: str, *, broad: bool) -> list[_Anchored]:
    spec = specifier + "**" if specifier.endswith("/") else specifier
    if spec.startswith("//"):
        return [_Anchored(prefix="", glob="/" + spec.lstrip("/"))]
    if spec == "~" or spec.startswith("~/"):
        return [_Anchored(prefix=expand_user("~"), glob=spec[1:])]
    if spec.startswith("/"):
        absolute = _Anchored(prefix="", glob=spec)
        relative = _Anchored(prefix=root, glob=spec)
        if broad:
            return [absolute, relative]
        first = spec.split("/")[1]
        is_absolute = not GLOB_CHARS & set(first) and os.path.lexists("/" + first)
        return [absolute if is_absolute else relative]
    while spec.startswith("./"):
        spec = spec[2:]
    anchored = [_Anchored(prefix=root, glob="/" + spec)]
    if broad and spec.startswith("**/"):
        anchored.append(_Anchored(prefix="", glob="/" + spec))
    return anchored


def _resolved_variant(anchored: _Anchored) -> _Anchored | None:
    """Return the pattern with its literal leading directories resolved, if that differs."""
    parts = anchored.glob.split("/")
    cut = next((i for i, part in enumerate(parts) if GLOB_CHARS & set(part)), len(parts))
    literal = anchored.prefix + "/".join(parts[:cut])
    if not literal:
        return None
    real = os.path.realpath(literal)
    if real == literal:
        return None
    rest = "/".join(parts[cut:])
    return _Anchored(prefix=real, glob="/" + rest if rest else "")


def glob_to_regex(glob: str) -> str:
    """Translate a path glob to a regex where only ``**`` crosses ``/``."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("/**/", i):
            out.append("(?:/.*)?/")
            i += 4
        elif glob.startswith("/**", i) and i + 3 == len(glob):
            out.append("(?:/.*)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            negate = body[:1] in {"!", "^"}
            body = body[1:] if negate else body
            members = re.escape(body).replace("\\-", "-")
            out.append(f"(?!/)[{'^' if negate else ''}{members}]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)
