"""Read-only is proven: tables generated from the per-program specs, and real-git repositories.

For every read-only program, every option listed as ``dangerous`` (runs programs, writes files)
or ``mutating`` must come out not read-only in every spelling getopt_long accepts: short,
clustered with a harmless flag, long, every unambiguous abbreviation, attached value,
``=value``, after operands, and after ``--``. Dangerous ones must also be escape hatches, so a
broad ``Bash(sort:*)`` rule does not cover them. The harmless options, in their spellings, must
still come out read-only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.filesystem._gitconfig import parse_config
from aimon_core.permission._gitcmd import GIT_SUBCOMMANDS
from aimon_core.permission._optspec import Arity, Option, OptionSpec
from aimon_core.permission._programs import FIND_PRIMARIES, PROGRAMS
from aimon_core.permission._readonly import escape_hatches, is_read_only_argv

VALUE = "1"
# A value each program accepts in a read-only use (sed's scripts must be `Np`).
VALUES = {"sed": "1p"}
GIT_EXAMPLES: dict[str, tuple[str, ...]] = {
    "status": (), "log": ("--oneline",), "show": ("HEAD",), "diff": ("--stat",),
    "branch": ("-a",), "tag": ("-l",), "remote": ("-v",), "rev-parse": ("HEAD",),
    "ls-files": (), "blame": ("a.txt",), "grep": ("-n", "TODO"), "describe": ("--tags",),
    "config": ("--get", "user.name"),
}
# Options that change what a read-only use means, so adding one to the example is not a test
# of the option (two `git config` actions; `-l` and `--list` are actions there).
NOT_ADDABLE = {
    ("git config", name) for name in (
        "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color",
        "--get-colorbool", "--list", "-l",
    )
}


@pytest.fixture(scope="module")
def clean_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside any repository: git finds no configuration to vet there."""
    return tmp_path_factory.mktemp("no-repo")


def _long_names(spec: OptionSpec) -> list[str]:
    return [o.name for o in (*spec.allowed, *spec.dangerous, *spec.mutating) if o.is_long]


def abbreviations(spec: OptionSpec, option: Option) -> list[str]:
    """Every prefix of a long option that names it and no other known option."""
    others = [n for n in _long_names(spec) if n != option.name]
    return [
        option.name[:end] for end in range(3, len(option.name))
        if not any(n.startswith(option.name[:end]) for n in others)
    ]


def _harmless_flag(spec: OptionSpec, option: Option) -> str | None:
    for candidate in spec.allowed:
        if (not candidate.is_long and candidate.arity is Arity.NONE and candidate != option
                and not any(candidate.name == name for _, name in NOT_ADDABLE)):
            return candidate.name[1]
    return None


def spellings(spec: OptionSpec, option: Option, value: str) -> Iterator[tuple[str, ...]]:
    """Yield every way to write ``option`` that the program reads as that option."""
    if option.is_long:
        names = [option.name] + (abbreviations(spec, option) if spec.abbreviations else [])
        for name in names:
            match option.arity:
                case Arity.NONE:
                    yield (name,)
                case Arity.OPTIONAL:
                    yield (name,)
                    yield (f"{name}={value}",)
                case Arity.REQUIRED:
                    yield (f"{name}={value}",)
                    yield (name, value)
        return
    letter = option.name[1]
    flag = _harmless_flag(spec, option) if spec.clusters else None
    prefixes = ["-"] + ([f"-{flag}"] if flag else [])
    for prefix in prefixes:
        match option.arity:
            case Arity.NONE:
                yield (f"{prefix}{letter}",)
                if flag and prefix == "-":
                    yield (f"-{letter}{flag}",)
            case Arity.OPTIONAL:
                yield (f"{prefix}{letter}",)
                if spec.clusters:
                    yield (f"{prefix}{letter}{value}",)
            case Arity.REQUIRED:
                yield (f"{prefix}{letter}", value)
                if spec.clusters:
                    yield (f"{prefix}{letter}{value}",)


def _placements(example: tuple[str, ...], words: tuple[str, ...], permute: bool
                ) -> Iterator[tuple[tuple[str, ...], str]]:
    yield (example[0], *words, *example[1:]), "before operands"
    if permute:
        yield (*example, *words), "after operands"
    yield (*example, "--", *words), "after --"


def _cases() -> Iterator[tuple[str, ...]]:
    """Yield (label, program key, option name) for every option of every spec."""
    for name, program in PROGRAMS.items():
        if not program.any_args and not program.words:
            yield ("program", name)
    for sub in GIT_SUBCOMMANDS:
        yield ("git", sub)


def _subject(kind: str, key: str) -> tuple[OptionSpec, tuple[str, ...], str]:
    if kind == "git":
        return GIT_SUBCOMMANDS[key], ("git", key, *GIT_EXAMPLES[key]), f"git {key}"
    program = PROGRAMS[key]
    return program.spec, program.example, key


def _generated(danger: bool) -> list[object]:
    params: list[object] = []
    for kind, key in _cases():
        spec, _, label = _subject(kind, key)
        chosen = spec.dangerous if danger else spec.mutating
        for option in chosen:
            params.append(pytest.param(kind, key, option, id=f"{label} {option.name}"))
    return params


def _argvs(kind: str, spec: OptionSpec, example: tuple[str, ...], option: Option, value: str
           ) -> Iterator[tuple[tuple[str, ...], str]]:
    head = 2 if kind == "git" else 1
    for words in spellings(spec, option, value):
        for argv, where in _placements(("\0".join(example[:head]), *example[head:]), words,
                                       spec.permute):
            yield (*argv[0].split("\0"), *argv[1:]), where


@pytest.mark.parametrize(("kind", "key", "option"), _generated(danger=True))
def test_dangerous_option_is_never_read_only_and_always_a_hatch(
    kind: str, key: str, option: Option, clean_dir: Path
) -> None:
    spec, example, _ = _subject(kind, key)
    value = VALUES.get(key, VALUE)
    for argv, where in _argvs(kind, spec, example, option, value):
        assert not is_read_only_argv(argv, cwd=clean_dir), (argv, where)
        assert escape_hatches(argv), (argv, where)


@pytest.mark.parametrize(("kind", "key", "option"), _generated(danger=False))
def test_mutating_option_is_never_read_only(kind: str, key: str, option: Option,
                                            clean_dir: Path) -> None:
    spec, example, _ = _subject(kind, key)
    for argv, where in _argvs(kind, spec, example, option, VALUE):
        if where == "after --":
            continue  # an operand there (`git branch -- -d` names a branch pattern)
        assert not is_read_only_argv(argv, cwd=clean_dir), (argv, where)


@pytest.mark.parametrize(("kind", "key"), list(_cases()), ids=lambda x: str(x))
def test_examples_and_harmless_options_stay_read_only(kind: str, key: str,
                                                      clean_dir: Path) -> None:
    spec, example, label = _subject(kind, key)
    assert is_read_only_argv(example, cwd=clean_dir), example
    head = 2 if kind == "git" else 1
    value = VALUES.get(key, VALUE)
    for option in spec.allowed:
        if (label, option.name) in NOT_ADDABLE:
            continue
        for words in spellings(spec, option, value):
            argv = (*example[:head], *words, *example[head:])
            assert is_read_only_argv(argv, cwd=clean_dir), argv


def test_find_primaries_and_hatches(clean_dir: Path) -> None:
    for word, count in FIND_PRIMARIES.items():
        argv = ("find", ".", word, *(["x"] * count))
        assert is_read_only_argv(argv, cwd=clean_dir), argv
    for option in PROGRAMS["find"].spec.dangerous:
        argv = ("find", ".", "-name", "*.py", option.name, "x", ";")
        assert not is_read_only_argv(argv, cwd=clean_dir), argv
        assert escape_hatches(argv), argv
    assert not is_read_only_argv(("find", ".", "-fprint0", "out"))
    assert not is_read_only_argv(("find", ".", "-name"))  # a primary missing its value


@pytest.mark.parametrize("argv", [
    # Attacks that got through the old fail-open list.
    ("sed", "s/a/b/", "f", "-i"), ("sed", "-n", "1p", "f", "--in-place=.bak"),
    ("sed", "-n", "1p;w out", "f"), ("sed", "-n", "1e id", "f"), ("sed", "s/a/b/e", "f"),
    ("sed", "s/a/b/w out", "f"), ("sed", "-n", "1W out", "f"), ("sed", "-n", "-f", "s", "f"),
    ("sort", "--outp=x", "f"), ("sort", "-no", "x", "f"), ("sort", "f", "-ox"),
    ("sort", "--compress-prog=sh", "f"), ("sort", "--output", "x", "f"),
    ("uniq", "in", "out"), ("uniq", "-c", "in", "out"), ("file", "-C", "-m", "magic"),
    ("file", "--comp", "-m", "m"), ("date", "-s", "2020-01-01"), ("date", "--set=x"),
    ("date", "--se", "x"), ("date", "01010000"), ("tree", "-o", "out"), ("rg", "-z", "x"),
    ("rg", "--pre", "./evil", "x"), ("rg", "x", "--pre=./evil"), ("diff", "-l", "a", "b"),
    ("diff", "--pag", "a", "b"), ("git", "grep", "-Ovim", "x"), ("git", "grep", "--open", "x"),
    ("git", "grep", "-nO", "x"), ("git", "log", "--output=x"), ("git", "diff", "--ext-diff"),
    ("git", "-c", "core.pager=id", "log"), ("git", "--config-env=core.pager=X", "log"),
    ("git", "-Cx", "status"), ("git", "--git-dir=x", "status"),
    ("git", "--work-tree=x", "status"), ("git", "--exec-path=x", "status"),
    ("git", "--namespace=x", "log"), ("git", "branch", "-D", "x"), ("git", "branch", "x"),
    ("git", "tag", "x"), ("git", "config", "user.name", "x"), ("git", "config", "--list", "x"),
    ("git", "remote", "add", "o", "u"), ("git", "stash"), ("sort", "--", "-o"),
    ("git", "grep", "-n", "-e", "-O", "x"), ("git", "log", "--", "--output=x"),
    ("ls", "--bogus"), ("ls", "-j"),
    ("cat", "--show"), ("head", "--bytes"), ("./ls",), ("printf", "-v", "x", "y"),
])
def test_not_read_only(argv: tuple[str, ...], clean_dir: Path) -> None:
    assert not is_read_only_argv(argv, cwd=clean_dir)


@pytest.mark.parametrize("argv", [
    ("sed", "-n", "5p", "f"), ("sed", "1,3p", "-n", "f"), ("sed", "--quiet", "-e", "$p", "f"),
    ("sort", "-rn", "-k2", "f"), ("sort", "--rev", "f"), ("sort", "f", "-u"),
    ("uniq", "-c", "in"), ("date", "+%s"), ("date", "-u"),
    ("head", "-20", "f"), ("tail", "-n+5", "f"), ("grep", "-3", "x", "f"), ("ls", "--col"),
    ("ls", "-la", "--", "-o"), ("cut", "-d:", "-f1", "f"), ("find", "-name", "x"),
    ("find", "src", "(", "-name", "*.py", "-o", "-newermt", "2024-01-01", ")", "-print0"),
    ("git", "--no-pager", "log", "-5", "--oneline"), ("git", "status", "--porc"),
    ("git", "branch", "--sh"), ("git", "diff", "HEAD~1", "--", "src"),
    ("git", "grep", "-n", "-eO", "x"), ("git", "config", "--get-regexp", "remote"),
    ("git", "tag", "-l", "v1*"), ("git", "branch", "--list", "feat/*"), ("echo", "-o", "x"),
])
def test_read_only(argv: tuple[str, ...], clean_dir: Path) -> None:
    assert is_read_only_argv(argv, cwd=clean_dir)


def test_git_without_a_folder_is_never_read_only() -> None:
    assert not is_read_only_argv(("git", "status"))
    assert not is_read_only_argv(("git", "-C", "/", "status"))
    assert is_read_only_argv(("ls",))


# ---- real git ------------------------------------------------------------------------------

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")


def git(*args: str, cwd: Path) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com",
           "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.com"}
    done = subprocess.run([GIT or "git", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, check=True, timeout=30)
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    (root / "a.txt").write_text("a\n")
    git("add", "a.txt", cwd=root)
    git("commit", "-qm", "init", cwd=root)
    git("remote", "add", "origin", "https://example.com/x.git", cwd=root)
    git("config", "branch.main.remote", "origin", cwd=root)
    git("config", "branch.main.merge", "refs/heads/main", cwd=root)
    git("config", "user.name", "Someone", cwd=root)
    return root


def status_read_only(cwd: Path) -> bool:
    return is_read_only_argv(("git", "status"), cwd=cwd)


HOSTILE_KEYS = [
    ("core.fsmonitor", "touch pwned"), ("core.pager", "sh -c id"), ("pager.status", "id"),
    ("alias.st", "!id"), ("diff.external", "id"), ("diff.x.textconv", "id"),
    ("diff.x.command", "id"), ("filter.x.clean", "id"), ("filter.x.process", "id"),
    ("core.hooksPath", "hooks2"), ("credential.helper", "!id"), ("core.sshCommand", "id"),
    ("core.editor", "id"), ("gpg.program", "id"), ("include.path", "other"),
    ("includeIf.gitdir:/.path", "other"), ("core.worktree", "/tmp"), ("core.askPass", "id"),
    ("sequence.editor", "id"), ("remote.origin.uploadpack", "id"), ("core.gitProxy", "id"),
    ("submodule.x.update", "!id"), ("merge.x.driver", "id"), ("uploadpack.packObjectsHook", "id"),
]


@needs_git
def test_clean_repository_is_read_only(repo: Path) -> None:
    assert status_read_only(repo)
    (repo / "src").mkdir()
    assert status_read_only(repo / "src")
    assert is_read_only_argv(("git", "log", "--oneline"), cwd=repo)


@needs_git
@pytest.mark.parametrize(("key", "value"), HOSTILE_KEYS, ids=[k for k, _ in HOSTILE_KEYS])
def test_hostile_config_key_is_not_read_only(repo: Path, key: str, value: str) -> None:
    assert status_read_only(repo)
    git("config", key, value, cwd=repo)
    assert not status_read_only(repo)
    assert not status_read_only(repo / ".git")


@needs_git
def test_fsmonitor_really_runs_and_is_refused(repo: Path) -> None:
    marker = repo.parent / "pwned"
    git("config", "core.fsmonitor", f"touch {marker}", cwd=repo)
    # The threat is real: a plain `git status` runs the configured program.
    subprocess.run([GIT or "git", "status"], cwd=repo, capture_output=True, check=False,
                   timeout=30)
    assert marker.exists()
    assert not status_read_only(repo)


@needs_git
def test_hooks_config_worktree_and_odd_files(repo: Path) -> None:
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\nid\n")
    assert not status_read_only(repo)
    hook.rename(hook.with_suffix(".sample"))
    assert status_read_only(repo)
    (repo / ".git" / "config.worktree").write_text("[core]\n\tfsmonitor = id\n")
    assert not status_read_only(repo)
    (repo / ".git" / "config.worktree").write_text("[core\n")
    assert not status_read_only(repo)
    (repo / ".git" / "config.worktree").unlink()
    assert status_read_only(repo)


@needs_git
def test_special_files_are_never_read(repo: Path) -> None:
    config = repo / ".git" / "config.worktree"
    os.mkfifo(config)  # reading it would block the decision forever
    assert not status_read_only(repo)
    config.unlink()
    config.symlink_to("/dev/zero")
    assert not status_read_only(repo)
    config.unlink()
    assert status_read_only(repo)


@needs_git
def test_bare_looking_folder_written_by_hand(tmp_path: Path) -> None:
    bare = tmp_path / "x"
    (bare / "objects").mkdir(parents=True)
    (bare / "refs").mkdir()
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    (bare / "config").write_text("[core]\n\tbare = true\n")
    assert status_read_only(bare)
    (bare / "config").write_text("[core]\n\tbare = true\n\tfsmonitor = touch pwned\n")
    assert not status_read_only(bare)
    (bare / "objects" / "sub").mkdir()
    assert not status_read_only(bare / "objects" / "sub")
    assert not is_read_only_argv(("git", "-C", "x", "status"), cwd=tmp_path)
    assert not is_read_only_argv(("git", "-C", str(bare), "status"), cwd=Path("/"))
    (bare / "config").write_text("[core]\n\tbare = true\n")
    assert is_read_only_argv(("git", "-C", "x", "status"), cwd=tmp_path)
    # git itself takes the folder for a repository (so the vetting is not moot).
    assert git("rev-parse", "--git-dir", cwd=bare).strip() == "."


@needs_git
def test_worktree_gitfile_uses_the_common_config(repo: Path, tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    git("worktree", "add", "-q", str(tree), cwd=repo)
    assert (tree / ".git").is_file()
    assert status_read_only(tree)
    git("config", "core.pager", "id", cwd=repo)
    assert not status_read_only(tree)


@needs_git
def test_hand_written_gitfile_is_followed(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    assert status_read_only(elsewhere)
    git("config", "core.fsmonitor", "id", cwd=repo)
    assert not status_read_only(elsewhere)
    (elsewhere / ".git").write_text("not a gitfile\n")
    assert not status_read_only(elsewhere)


@needs_git
def test_submodule_configuration_counts(repo: Path) -> None:
    sub = repo / "sub"
    sub.mkdir()
    git("init", "-q", cwd=sub)
    git("commit", "-q", "--allow-empty", "-m", "i", cwd=sub)
    git("add", "sub", cwd=repo)
    assert status_read_only(repo)
    git("config", "core.fsmonitor", "id", cwd=sub)
    assert not status_read_only(repo)


@needs_git
@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_submodules_are_found_in_every_index_version(repo: Path, version: str) -> None:
    sub = repo / "deep" / "sub"
    sub.mkdir(parents=True)
    git("init", "-q", cwd=sub)
    git("commit", "-q", "--allow-empty", "-m", "i", cwd=sub)
    for i in range(30):
        (repo / "deep" / f"file-{i:02}.txt").write_text(f"{i}\n")
    git("add", "deep", cwd=repo)
    git("update-index", "--index-version", version, cwd=repo)
    assert status_read_only(repo)
    git("config", "core.pager", "id", cwd=sub)
    assert not status_read_only(repo)


@needs_git
def test_sha256_repository(tmp_path: Path) -> None:
    root = tmp_path / "r"
    root.mkdir()
    git("init", "-q", "--object-format=sha256", cwd=root)
    (root / "a.txt").write_text("a\n")
    git("add", "a.txt", cwd=root)
    assert status_read_only(root)


@needs_git
def test_folders_named_like_git_files_are_not_repositories(repo: Path) -> None:
    app = repo / "app"
    (app / "config").mkdir(parents=True)
    (app / "objects").mkdir()
    (repo / "lib").mkdir()
    (repo / "lib" / "config").write_text("not: a git config\n")
    assert status_read_only(app)
    assert status_read_only(repo / "lib")


@needs_git
def test_a_change_to_the_config_is_seen_at_once(repo: Path) -> None:
    assert status_read_only(repo)
    with (repo / ".git" / "config").open("a") as config:
        config.write("[core]\n\tpager = id\n")
    assert not status_read_only(repo)


@needs_git
def test_environment_choosing_a_repository_fails_closed(repo: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    assert not status_read_only(repo)


CONFIGS = [
    "[core]\n\tbare = false \\\n\tfsmonitor = id\n",
    '[remote "or\\"ig]in"]\n\turl = "a;b" # c\n',
    "[core] bare = true\n[user]\nname\n",
    '[core]\n\tbare = "x\\\n y"\n; comment \\\n[alias]\n',
    "\ufeff[core]\n\tbare\t=\ttrue\r\n[Remote.Origin]\n\tURL = u\n",
    "[section.Sub]\nkey = 1\n",
]


@needs_git
@pytest.mark.parametrize("text", CONFIGS)
def test_config_reader_agrees_with_git(text: str, tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_bytes(text.encode("utf-8"))
    listed = git("config", "--file", str(path), "--list", "--null", cwd=tmp_path)
    expected = tuple(
        (entry.split("\n", 1)[0], entry.split("\n", 1)[1] if "\n" in entry else "true")
        for entry in listed.split("\0") if entry
    )
    assert parse_config(path.read_bytes()) == expected


@pytest.mark.parametrize("text", [
    "[core]\n\tfsmonitor = \"unterminated\n", "[core]\n\tbare = \\q\n", "key = 1\n",
    "[core]\n\tbare # c\n", "[]\n", '[a "b]\n',
])
def test_config_reader_refuses_what_git_rejects(text: str) -> None:
    assert parse_config(text.encode()) is None
