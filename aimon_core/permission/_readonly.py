"""Knowledge about programs: read-only invocations, escape-hatch arguments, risky env names.

Everything here looks at one literal argv. An escape hatch is an argument that makes a
program run other programs or write files it was not obviously asked to write (``git -c
core.pager=...``, ``rg --pre``, ``find -exec``, ``sed -i``, ``sort -o``); a broad allow rule
does not cover one. When in doubt, a command is not read-only.
"""

from __future__ import annotations

import re

Hatch = tuple[int, str]

_DANGEROUS_ENV = frozenset({
    "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PAGER", "EDITOR",
    "VISUAL", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT",
    "RUBYLIB", "IFS", "PS4", "PROMPT_COMMAND", "HOME", "SHELL", "SHELLOPTS", "BASHOPTS",
    "CDPATH", "GLOBIGNORE", "MANPAGER", "BROWSER", "LESS", "LESSOPEN", "LESSCLOSE",
    "GREP_OPTIONS", "RIPGREP_CONFIG_PATH", "TAR_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "CLASSPATH", "ZDOTDIR", "TERMINFO", "GCONV_PATH", "MAKEFLAGS", "RUSTC_WRAPPER",
})
_DANGEROUS_ENV_PREFIXES = (
    "LD_", "DYLD_", "GIT_", "PYTHON", "BASH_FUNC_", "XDG_", "NPM_CONFIG_", "SSH_", "SUDO_",
)

_SIMPLE_READ_ONLY = frozenset({
    "ls", "cat", "head", "tail", "wc", "pwd", "echo", "grep", "rg", "find", "file", "stat",
    "du", "df", "which", "type", "whoami", "date", "uname", "printenv", "basename", "dirname",
    "realpath", "readlink", "tree", "sort", "cut", "tr", "diff", "cmp", "true", "false",
})
_VERSION_QUERIES = frozenset({
    ("python", "--version"), ("python", "-V"), ("python3", "--version"), ("python3", "-V"),
    ("node", "--version"), ("node", "-v"),
})

_GIT_GLOBAL_WITH_VALUE = frozenset({
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
    "--list-cmds", "--attr-source",
})
_GIT_EXEC_OPTIONS = frozenset({
    "--upload-pack", "--receive-pack", "--exec", "--ext-diff", "--textconv", "--output",
    "--open-files-in-pager", "--extcmd", "--sendmail-cmd", "--to-cmd", "--cc-cmd",
    "--config-env", "--exec-path", "--tool", "--strategy", "--gpg-program",
})
_GIT_CONFIG_READS = frozenset({
    "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
    "--list", "-l",
})
_GIT_CONFIG_WRITES = frozenset({
    "--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section",
    "-e", "--edit",
})
_GIT_BRANCH_LONG = frozenset({
    "--list", "--all", "--remotes", "--verbose", "--show-current", "--contains",
    "--no-contains", "--merged", "--no-merged", "--points-at", "--format", "--sort", "--color",
    "--no-color", "--column", "--no-column", "--abbrev", "--no-abbrev", "--ignore-case",
})
_GIT_BRANCH_LISTING = frozenset({
    "--list", "--contains", "--no-contains", "--merged", "--no-merged", "--points-at",
})

_OPTION_HATCHES: dict[str, frozenset[str]] = {
    "sort": frozenset({"-o", "--output", "--compress-program"}),
    "rg": frozenset({"--pre", "--pre-glob", "--hostname-bin"}),
    "find": frozenset({
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
        "-fls",
    }),
    "curl": frozenset({
        "--output", "--remote-name", "--remote-name-all", "--config", "--dump-header",
        "--cookie-jar", "--trace", "--trace-ascii", "--libcurl", "--output-dir", "--etag-save",
        "--stderr", "--create-dirs",
    }),
    "wget": frozenset({
        "-O", "--output-document", "-o", "--output-file", "-a", "--append-output", "-P",
        "--directory-prefix", "-e", "--execute", "--use-askpass",
    }),
    "tar": frozenset({
        "--to-command", "--checkpoint-action", "-I", "--use-compress-program", "--rsh-command",
        "--info-script", "-F", "--new-volume-script",
    }),
    "rsync": frozenset({"-e", "--rsh", "--rsync-path"}),
    "man": frozenset({"-P", "--pager", "-H", "--html"}),
    "file": frozenset({"-C", "--compile"}),
    "tree": frozenset({"-o", "-R"}),
    "date": frozenset({"-s", "--set"}),
    "awk": frozenset({"-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load"}),
}
_OPTION_HATCHES |= dict.fromkeys(("gawk", "mawk", "nawk"), _OPTION_HATCHES["awk"])
# Short options of curl that write files, and those whose value ends a cluster like `-sSLo`.
_CURL_SHORT_WRITES = frozenset("oOKDc")
_CURL_SHORT_VALUED = frozenset("AbcCdDeEFHKmoPrTuUwxXyYzQ")
_SED_SIMPLE_COMMANDS = frozenset("pPdDqQnN=lgGhHx{}")
_SED_S_FLAGS = frozenset("gpiImM0123456789")
_INTEGER = re.compile(r"-?\d+")
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})


def assignment_problem(assignment: str) -> str | None:
    """Say why a ``NAME=value`` prefix is unsafe, or None when it is harmless."""
    name = assignment.split("=", 1)[0].removesuffix("+")
    upper = name.upper()
    if name in _DANGEROUS_ENV or upper.startswith(_DANGEROUS_ENV_PREFIXES):
        return f"sets {name}, which can change what runs"
    return None


def escape_hatches(argv: tuple[str, ...]) -> tuple[Hatch, ...]:
    """Return (index, reason) for each argument that lets ``argv`` run or write more."""
    if not argv:
        return ()
    program = argv[0].rsplit("/", 1)[-1]
    match program:
        case "git":
            return _git_hatches(argv)
        case "sed":
            return _sed_hatches(argv)
        case "curl":
            return _curl_hatches(argv) + _option_hatches(program, argv)
        case "rsync" if any(re.fullmatch(r"-[a-zA-Z]*e[a-zA-Z]*", a) for a in argv[1:]):
            return ((1, "rsync -e runs a remote shell command"),)
        case "awk" | "gawk" | "mawk" | "nawk":
            return _awk_hatches(argv) + _option_hatches(program, argv)
        case _:
            return _option_hatches(program, argv)


def _option_hatches(program: str, argv: tuple[str, ...]) -> tuple[Hatch, ...]:
    options = _OPTION_HATCHES.get(program)
    if not options:
        return ()
    hits: list[Hatch] = []
    for index, arg in enumerate(argv[1:], 1):
        name = arg.split("=", 1)[0]
        short = arg.startswith("-") and not arg.startswith("--")
        attached = short and len(arg) > 2 and arg[:2] in options
        # Only for programs whose short options cluster simply (`sort -uo out`).
        clustered = short and program == "sort" and "o" in arg
        if name in options or attached or clustered:
            hits.append((index, f"`{program} {name}` can run programs or write files"))
    return tuple(hits)


def _curl_hatches(argv: tuple[str, ...]) -> tuple[Hatch, ...]:
    hits: list[Hatch] = []
    for index, arg in enumerate(argv[1:], 1):
        if not arg.startswith("-") or arg.startswith("--"):
            continue
        for letter in arg[1:]:
            if letter in _CURL_SHORT_WRITES:
                hits.append((index, f"`curl -{letter}` writes files"))
                break
            if letter in _CURL_SHORT_VALUED:
                break
    return tuple(hits)


def _awk_hatches(argv: tuple[str, ...]) -> tuple[Hatch, ...]:
    for index, arg in enumerate(argv[1:], 1):
        if arg.startswith("-"):
            continue
        if "system" in arg or "|" in arg or ">" in arg:
            return ((index, "the awk program can run commands or write files"),)
        return ()
    return ()


def _git_subcommand(argv: tuple[str, ...]) -> tuple[int, list[Hatch]]:
    """Return the subcommand's index and the hatches among git's global options."""
    hits: list[Hatch] = []
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in {"-c", "--config-env", "--exec-path"} or arg.startswith("-c"):
            hits.append((i, f"`git {name}` can make git run other programs"))
        i += 2 if arg in _GIT_GLOBAL_WITH_VALUE else 1
    return i, hits


def _git_hatches(argv: tuple[str, ...]) -> tuple[Hatch, ...]:
    index, hits = _git_subcommand(argv)
    sub = argv[index] if index < len(argv) else ""
    args = argv[index + 1 :]
    for offset, arg in enumerate(args, index + 1):
        name = arg.split("=", 1)[0]
        if (
            name in _GIT_EXEC_OPTIONS
            or (sub == "grep" and arg.startswith("-O"))
            or (sub in {"rebase", "difftool"} and arg.startswith("-x"))
            or (sub in {"clone", "ls-remote"} and arg.startswith("-u"))
            or (sub in {"clone", "submodule"} and name in {"-c", "--config"})
            or (sub == "bisect" and arg == "run")
            or (sub == "submodule" and arg == "foreach")
        ):
            hits.append((offset, f"`git {sub} {name}` can run other programs or write files"))
    if sub == "filter-branch":
        hits.append((index, "`git filter-branch` runs shell filters"))
    if sub == "config" and not _git_config_reads(args):
        hits.append((index, "`git config` changes settings that can make git run programs"))
    return tuple(hits)


def _git_config_reads(args: tuple[str, ...]) -> bool:
    if args and args[0] in {"get", "list"}:
        return True
    return any(a in _GIT_CONFIG_READS for a in args) and not any(
        a in _GIT_CONFIG_WRITES for a in args
    )


def _sed_hatches(argv: tuple[str, ...]) -> tuple[Hatch, ...]:
    scripts: list[tuple[int, str]] = []
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            i += 1
            break
        if arg in {"-e", "--expression"} and i + 1 < len(argv):
            scripts.append((i + 1, argv[i + 1]))
            i += 2
        elif arg.startswith("--expression="):
            scripts.append((i, arg.split("=", 1)[1]))
            i += 1
        elif arg.startswith(("-i", "--in-place", "-f", "--file", "-s")):
            return ((i, f"`sed {arg}` edits files or runs an unseen script"),)
        elif arg in {"-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-z",
                     "--null-data", "-u", "--posix", "--sandbox", "--debug", "-nE", "-En"}:
            i += 1
        elif arg.startswith("-") and arg != "-":
            return ((i, f"sed option {arg!r} is not known to be safe"),)
        else:
            break
    if not scripts and i < len(argv):
        scripts.append((i, argv[i]))
    return tuple(
        (index, "the sed script may run commands or write files")
        for index, script in scripts
        if not sed_script_is_safe(script)
    )


def sed_script_is_safe(script: str) -> bool:
    """Tell whether a sed script only prints, deletes, substitutes or transliterates."""
    i, n = 0, len(script)
    while True:
        while i < n and script[i] in " \t\n;":
            i += 1
        if i >= n:
            return True
        step = _sed_address(script, i)
        if step is not None and step < n and script[step] == ",":
            step = _sed_address(script, step + 1)
        if step is None:
            return False
        i = step
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return False
        if script[i] in _SED_SIMPLE_COMMANDS:
            i += 1
        elif script[i] in "sy":
            command = script[i]
            end = _skip_delimited(script, i + 1, 2)
            if end is None:
                return False
            i = end
            while command == "s" and i < n and script[i] in _SED_S_FLAGS:
                i += 1
        else:
            return False
        if i < n and script[i] not in " \t\n;}":
            return False


def _sed_address(script: str, i: int) -> int | None:
    n = len(script)
    if i < n and script[i].isdigit():
        while i < n and (script[i].isdigit() or script[i] == "~"):
            i += 1
        return i
    if i < n and script[i] == "$":
        return i + 1
    if i < n and script[i] == "/":
        end = _skip_delimited(script, i, 1)
        while end is not None and end < n and script[end] in "IM":
            end += 1
        return end
    return i


def _skip_delimited(script: str, i: int, count: int) -> int | None:
    """Skip ``count`` more unescaped copies of the delimiter at ``script[i]``."""
    if i >= len(script) or script[i] in "\n\\":
        return None
    delimiter = script[i]
    i += 1
    while i < len(script):
        if script[i] == "\\":
            i += 2
            continue
        i += 1
        if script[i - 1] == delimiter:
            count -= 1
            if count == 0:
                return i
    return None


def is_read_only_argv(argv: tuple[str, ...]) -> bool:
    """Tell whether a literal argv is a known read-only command with safe arguments."""
    if not argv or "/" in argv[0] or escape_hatches(argv):
        return False
    program, args = argv[0], argv[1:]
    if program in _SIMPLE_READ_ONLY:
        return not (program == "rg" and any(a in {"-z", "--search-zip"} for a in args))
    match program:
        case "git":
            return _git_read_only(argv)
        case "sed":
            return True
        case "printf":
            return not any(a.startswith("-v") for a in args)
        case "uniq":
            # A second operand is the output file.
            return sum(not a.startswith("-") for a in args) <= 1
        case "env":
            return not args
        case "test" | "[" | "[[":
            return _test_read_only(argv)
        case _:
            return argv in _VERSION_QUERIES


def _test_read_only(argv: tuple[str, ...]) -> bool:
    args = argv[1:-1] if argv[0] in {"[", "[["} else argv[1:]
    if argv[0] in {"[", "[["} and argv[-1] not in {"]", "]]"}:
        return False
    for index, arg in enumerate(args):
        # `[[ x -eq 1 ]]` evaluates x as arithmetic, and `a[$(cmd)]` runs cmd.
        if "[" in arg or arg == "-v":
            return False
        if arg in _ARITHMETIC_TESTS:
            operands = args[index - 1 : index] + args[index + 1 : index + 2]
            if len(operands) != 2 or not all(_INTEGER.fullmatch(o) for o in operands):
                return False
    return True


def _git_read_only(argv: tuple[str, ...]) -> bool:
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] == "--no-pager":
            i += 1
        elif argv[i] == "-C" and i + 1 < len(argv):
            i += 2
        else:
            return False
    if i >= len(argv):
        return False
    sub, args = argv[i], argv[i + 1 :]
    match sub:
        case "status" | "diff" | "log" | "show" | "rev-parse" | "ls-files" | "blame" | "grep":
            return True
        case "describe":
            return True
        case "branch":
            return _git_branch_read_only(args)
        case "remote":
            return args in {(), ("-v",), ("--verbose",)}
        case "tag":
            listing = not args or args[0] in {"-l", "--list"}
            return listing and not any(a.startswith("-") for a in args[1:])
        case "config":
            return _git_config_reads(args)
        case _:
            return False


def _git_branch_read_only(args: tuple[str, ...]) -> bool:
    listing = False
    positional = False
    for arg in args:
        if arg.startswith("--"):
            name = arg.split("=", 1)[0]
            if name not in _GIT_BRANCH_LONG:
                return False
            listing = listing or name in _GIT_BRANCH_LISTING
        elif arg.startswith("-") and len(arg) > 1:
            if not set(arg[1:]) <= set("arvil"):
                return False
            listing = listing or "l" in arg
        else:
            positional = True
    return listing or not positional
