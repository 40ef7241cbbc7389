"""Git: the read-only sub-commands with their option specs, and git's escape hatches.

A read-only git command also needs a repository whose configuration runs nothing
(``aimon_core.filesystem.repository_is_inert``, shared with aimon's own description of the
repository): ``core.fsmonitor``, ``core.pager``, aliases, diff drivers and hooks in a checkout
the model could have written are code.
"""

from __future__ import annotations

from pathlib import Path

from aimon_core.filesystem import repository_is_inert
from aimon_core.permission._optspec import (
    OptionSpec,
    Parsed,
    Refused,
    dangerous_at,
    options,
    parse_args,
)
from aimon_core.permission._programs import Check

Hatch = tuple[int, str]

# Global options git.c accepts before the sub-command that never change what runs or where
# (`-C DIR` moves where git looks for the repository; `git_read_only` vets that one).
GIT_READ_ONLY_GLOBALS = frozenset({"--no-pager", "-P", "--no-optional-locks"})
# Global options whose value is the next argument (git.c matches them exactly).
_GLOBALS_WITH_VALUE = frozenset({
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
    "--list-cmds", "--attr-source",
})
_GLOBAL_HATCHES = ("--config-env", "--exec-path")

_DIFF = (
    "-p -u -s -U= -W -R -a -b -w -z -D -M? -C? -B? -l= -O= -S= -G= -I= -c -m --cc --patch"
    " --no-patch --unified= --raw --patch-with-raw --patch-with-stat --numstat --shortstat"
    " --dirstat? --cumulative --summary --name-only --name-status --stat? --compact-summary"
    " --stat-width= --stat-name-width= --stat-count= --stat-graph-width= --color?"
    " --no-color --color-moved? --no-color-moved --color-moved-ws= --word-diff?"
    " --word-diff-regex= --color-words? --no-renames --find-renames? --find-copies?"
    " --find-copies-harder --break-rewrites? --irreversible-delete --diff-filter="
    " --pickaxe-all --pickaxe-regex --relative? --no-relative --text --ignore-cr-at-eol"
    " --ignore-space-at-eol --ignore-space-change --ignore-all-space --ignore-blank-lines"
    " --ignore-matching-lines= --inter-hunk-context= --function-context --exit-code --quiet"
    " --no-ext-diff --no-textconv --ignore-submodules? --submodule? --src-prefix="
    " --dst-prefix= --no-prefix --default-prefix --line-prefix= --abbrev? --binary"
    " --full-index --minimal --patience --histogram --diff-algorithm= --anchored="
    " --indent-heuristic --no-indent-heuristic --check --diff-merges= --no-diff-merges"
    " --remerge-diff --combined-all-paths --dd --ita-invisible-in-index"
)
_LOG = (
    " -n= -i -E -F -P -g -L= --max-count= --skip= --since= --after= --until= --before="
    " --author= --committer= --grep= --grep-reflog= --all-match --invert-grep"
    " --regexp-ignore-case --basic-regexp --extended-regexp --fixed-strings --perl-regexp"
    " --remove-empty --merges --no-merges --min-parents= --max-parents= --no-min-parents"
    " --no-max-parents --first-parent --not --all --branches? --tags? --remotes? --glob="
    " --exclude= --reflog --single-worktree --ignore-missing --cherry-mark --cherry-pick"
    " --left-only --right-only --cherry --walk-reflogs --merge --boundary"
    " --simplify-by-decoration --full-history --dense --sparse --simplify-merges"
    " --ancestry-path? --show-pulls --date-order --author-date-order --topo-order --reverse"
    " --no-walk? --do-walk --pretty? --format= --abbrev-commit --no-abbrev-commit --oneline"
    " --encoding= --expand-tabs? --no-expand-tabs --notes? --no-notes --relative-date"
    " --date= --parents --children --left-right --graph --decorate? --no-decorate"
    " --decorate-refs= --decorate-refs-exclude= --clear-decorations --source --use-mailmap"
    " --mailmap --no-mailmap --full-diff --log-size --follow --no-follow"
)
_DIFF_HATCHES = "--output= --ext-diff --textconv"


def _spec(allowed: str, *, dangerous: str = "", mutating: str = "",
          max_operands: int | None = None, **knobs: bool) -> OptionSpec:
    return OptionSpec(allowed=options(allowed + " -h"), dangerous=options(dangerous),
                      mutating=options(mutating), max_operands=max_operands, **knobs)


_BRANCH_MUTATING = (
    "-d -D -m -M -c -C -f -u= -t? --delete --move --copy --force --set-upstream-to= --track?"
    " --no-track --unset-upstream --edit-description --create-reflog --recurse-submodules"
)
_TAG_MUTATING = (
    "-a -s -u= -f -d -v -m= -F= -e --annotate --sign --local-user= --force --delete --verify"
    " --message= --file= --edit --cleanup= --create-reflog --no-sign"
)
_CONFIG_ACTIONS = frozenset({
    "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
    "--list", "-l",
})
_LISTING = frozenset({
    "-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at",
})

# git log, show and diff parse their options without abbreviations; parse-options does.
GIT_SUBCOMMANDS: dict[str, OptionSpec] = {
    "status": _spec(
        "-s -b -u? -z -v --short --branch --show-stash --porcelain? --long --verbose"
        " --untracked-files? --ignored? --ignore-submodules? --column? --no-column"
        " --ahead-behind --no-ahead-behind --renames --no-renames --find-renames? --null"),
    "log": _spec(_DIFF + _LOG, dangerous=_DIFF_HATCHES, abbreviations=False, digits=True),
    "show": _spec(_DIFF + _LOG, dangerous=_DIFF_HATCHES, abbreviations=False, digits=True),
    "diff": _spec(_DIFF + " --cached --staged --merge-base --no-index", dangerous=_DIFF_HATCHES,
                  abbreviations=False),
    "branch": _spec(
        "-a -r -v -l -i --list --all --remotes --verbose --show-current --contains="
        " --no-contains= --merged= --no-merged= --points-at= --format= --sort= --color?"
        " --no-color --column? --no-column --abbrev= --no-abbrev --ignore-case --omit-empty",
        mutating=_BRANCH_MUTATING),
    "tag": _spec(
        "-l -n? -i --list --sort= --contains= --no-contains= --merged= --no-merged="
        " --points-at= --format= --color? --ignore-case --column? --no-column --omit-empty",
        mutating=_TAG_MUTATING),
    "remote": _spec("-v --verbose", max_operands=0),
    "rev-parse": _spec(
        "-q --show-toplevel --show-prefix --show-cdup --git-dir --git-common-dir"
        " --absolute-git-dir --is-inside-work-tree --is-inside-git-dir --is-bare-repository"
        " --is-shallow-repository --abbrev-ref? --short? --verify --quiet --symbolic"
        " --symbolic-full-name --all --branches? --tags? --remotes? --show-object-format?"
        " --show-superproject-working-tree --sq --sq-quote --local-env-vars --git-path="
        " --since= --until= --default= --no-revs --revs-only --no-flags --flags --not"
        " --path-format=", abbreviations=False),
    "ls-files": _spec(
        "-c -d -o -i -s -u -k -m -z -t -v -f -x= -X= --cached --deleted --others --ignored"
        " --stage --unmerged --killed --modified --directory --no-empty-directory --eol"
        " --deduplicate --exclude= --exclude-from= --exclude-per-directory="
        " --exclude-standard --full-name --error-unmatch --with-tree= --abbrev? --debug"
        " --sparse --format="),
    "blame": _spec(
        "-b -l -t -s -e -f -n -p -c -w -M? -C? -L= -S= --root --show-stats --porcelain"
        " --line-porcelain --incremental --show-name --show-number --show-email --date="
        " --abbrev? --encoding= --contents= --ignore-rev= --ignore-revs-file= --reverse="
        " --first-parent --color-lines --color-by-age --minimal --progress --no-progress"
        " --score-debug --no-textconv", dangerous="--textconv"),
    "grep": _spec(
        "-i -I -v -w -a -h -H -E -G -F -P -c -l -L -n -o -q -z -r -W -p -e= -f= -A= -B= -C="
        " -m= --cached --untracked --no-index --no-exclude-standard --exclude-standard --text"
        " --no-textconv --ignore-case --word-regexp --invert-match --full-name"
        " --extended-regexp --basic-regexp --perl-regexp --fixed-strings --line-number"
        " --column --files-with-matches --name-only --files-without-match --null --count"
        " --color? --no-color --break --heading --show-function --function-context"
        " --context= --before-context= --after-context= --threads= --and --or --not"
        " --all-match --quiet --max-depth= --max-count= --only-matching --recursive"
        " --no-recursive", dangerous="-O? --open-files-in-pager? --textconv", digits=True),
    "describe": _spec(
        "--all --tags --contains --abbrev= --candidates= --exact-match --debug --long"
        " --match= --exclude= --always --first-parent --dirty? --broken?"),
    "config": _spec(
        "-l -z -f= --get --get-all --get-regexp --get-urlmatch --get-color --get-colorbool"
        " --list --global --system --local --worktree --file= --blob= --show-origin"
        " --show-scope --null --name-only --type= --bool --int --bool-or-int --path"
        " --expiry-date --default= --includes --no-includes --fixed-value",
        mutating="--add --unset --unset-all --replace-all --rename-section --remove-section"
                 " -e --edit --comment=", max_operands=2),
}


def _branch_check(parsed: Parsed) -> str | None:
    if parsed.operands and not any(parsed.has(n) for n in _LISTING):
        return "`git branch NAME` creates a branch"
    return None


def _tag_check(parsed: Parsed) -> str | None:
    if parsed.operands and not parsed.has("-l", "--list"):
        return "`git tag NAME` creates a tag"
    return None


def _config_check(parsed: Parsed) -> str | None:
    actions = [name for name, _ in parsed.options if name in _CONFIG_ACTIONS]
    if len(actions) != 1:
        return "only `git config --get NAME` and `git config --list` are read-only"
    limit = (0, 0) if actions[0] in {"-l", "--list"} else (1, 2)
    if not limit[0] <= len(parsed.operands) <= limit[1]:
        return "`git config` with these operands changes settings"
    return None


_CHECKS: dict[str, Check] = {
    "branch": _branch_check, "tag": _tag_check, "config": _config_check,
}


def git_subcommand_index(argv: tuple[str, ...]) -> int:
    """Return the index of git's sub-command in ``argv`` (past the global options)."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _GLOBALS_WITH_VALUE else 1
    return i


def git_read_only(argv: tuple[str, ...], cwd: Path | None) -> bool:
    """Tell whether ``git ...`` only reads, in the repository git would use from ``cwd``."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "-C" and i + 1 < len(argv) and cwd is not None:
            # git chdirs first, then discovers: vet the repository found from there.
            cwd = cwd / argv[i + 1]
            i += 2
        elif argv[i] in GIT_READ_ONLY_GLOBALS:
            i += 1
        else:
            return False
    if i >= len(argv) or argv[i] not in GIT_SUBCOMMANDS:
        return False
    sub = argv[i]
    parsed = parse_args(GIT_SUBCOMMANDS[sub], argv[i + 1 :])
    if isinstance(parsed, Refused):
        return False
    check = _CHECKS.get(sub)
    if check is not None and check(parsed) is not None:
        return False
    # Without a cwd the repository cannot be found, so its configuration cannot be vetted.
    return cwd is not None and repository_is_inert(cwd)


def git_config_problem(argv: tuple[str, ...], cwd: Path | None) -> str | None:
    """Say why the repository ``git ...`` would use from ``cwd`` may run programs, or None.

    Allow rules such as ``Bash(git:*)`` are the user's choice of commands, not of whatever a
    repository's configuration (fsmonitor, pager, aliases, drivers, hooks) makes git run; a
    repository the model could have written must not turn an allowed command into its own.
    """
    if not argv or argv[0].rsplit("/", 1)[-1] != "git":
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "-C" and i + 1 < len(argv):
            cwd = (cwd or Path.cwd()) / argv[i + 1]
            i += 2
        else:
            i += 1
    if cwd is None or repository_is_inert(cwd):
        return None
    return ("the git repository there has configuration or hooks that can run programs "
            "(fsmonitor, pager, aliases, diff or filter drivers, hooks)")


# Long options of any sub-command that run programs or write files, by every abbreviation.
_LONG_HATCHES = (
    "--upload-pack", "--receive-pack", "--exec", "--ext-diff", "--textconv", "--output",
    "--output-directory", "--open-files-in-pager", "--extcmd", "--sendmail-cmd", "--to-cmd",
    "--cc-cmd", "--tool", "--strategy", "--gpg-program", "--config", "--config-env",
)
# Short options that run or write, by sub-command (clusters included, never one missed).
_SHORT_HATCHES = {
    "grep": "O", "rebase": "x", "difftool": "xt", "mergetool": "t", "clone": "uc",
    "ls-remote": "u", "submodule": "c", "format-patch": "o", "archive": "o",
}
_EXACT_KNOWN = frozenset(
    o.name for spec in GIT_SUBCOMMANDS.values() for o in spec.allowed if o.is_long
) | {"--to", "--cc", "--stdout"}


def git_hatches(argv: tuple[str, ...]) -> tuple[Hatch, ...]:
    """Return (index, reason) for each argument that lets a git command run or write more."""
    hits: list[Hatch] = []
    index = git_subcommand_index(argv)
    for i in range(1, index):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if (arg.startswith("-c") or any(h.startswith(name) for h in _GLOBAL_HATCHES)) and (
            name not in {"-C", "--"}
        ):
            hits.append((i, f"`git {name}` can make git run other programs"))
    if index >= len(argv):
        return tuple(hits)
    sub, args = argv[index], argv[index + 1 :]
    start = index + 1
    spec = GIT_SUBCOMMANDS.get(sub)
    if spec is not None:
        # parse-options resolves abbreviations among the sub-command's own options.
        hits.extend((start + i, _why(sub, n)) for i, n in dangerous_at(spec, args))
        hits.extend((i, _why(sub, a)) for i, a in enumerate(args, start)
                    if a.split("=", 1)[0] in _LONG_HATCHES)
    else:
        hits.extend((i, r) for i, a in enumerate(args, start) if (r := _arg_hatch(sub, a)))
    hits.extend(_subcommand_hatches(sub, args, index))
    return tuple(sorted(set(hits)))


def _why(sub: str, option: str) -> str:
    return f"`git {sub} {option}` can run other programs or write files"


def _arg_hatch(sub: str, arg: str) -> str:
    name = arg.split("=", 1)[0]
    if name.startswith("--") and len(name) > 2 and name not in _EXACT_KNOWN:
        for danger in _LONG_HATCHES:
            if danger.startswith(name):
                return _why(sub, danger)
    if arg.startswith("-") and not arg.startswith("--"):
        for letter in _SHORT_HATCHES.get(sub, ""):
            if letter in arg[1:]:
                return _why(sub, "-" + letter)
    return ""


def _subcommand_hatches(sub: str, args: tuple[str, ...], index: int) -> list[Hatch]:
    if sub == "filter-branch":
        return [(index, "`git filter-branch` runs shell filters")]
    if (sub, args[:1]) in {("bisect", ("run",)), ("submodule", ("foreach",))}:
        return [(index + 1, f"`git {sub} {args[0]}` runs a shell command")]
    if sub == "config":
        parsed = parse_args(GIT_SUBCOMMANDS["config"], args)
        if isinstance(parsed, Refused) or _config_check(parsed) is not None:
            return [(index, "`git config` changes settings that can make git run programs")]
    return []
