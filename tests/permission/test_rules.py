"""Rule parsing, whole-tool and path rules, precedence, and the read-only list."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.permission import (
    PermissionRules,
    Rule,
    RuleError,
    Verdict,
    evaluate_path,
    evaluate_tool,
    is_read_only_command,
    parse_rule,
)


@pytest.mark.parametrize(
    ("text", "tool", "specifier"),
    [
        ("Read", "Read", None),
        ("  WebSearch ", "WebSearch", None),
        ("Bash", "Bash", None),
        ("Bash(git:*)", "Bash", "git:*"),
        ("Bash(npm run test:*)", "Bash", "npm run test:*"),
        ("Bash(npm install)", "Bash", "npm install"),
        ("Bash(git *)", "Bash", "git *"),
        ("Bash(ls*)", "Bash", "ls*"),
        ("Bash(*)", "Bash", "*"),
        ("Bash(git commit -m 'a (b)')", "Bash", "git commit -m 'a (b)'"),
        ("Read(/tmp/**)", "Read", "/tmp/**"),
        ("Edit(src/**)", "Edit", "src/**"),
        ("Read(**/.env)", "Read", "**/.env"),
        ("WebFetch(domain:example.com)", "WebFetch", "domain:example.com"),
        ("mcp__server__tool", "mcp__server__tool", None),
        ("mcp__server__*", "mcp__server__*", None),
    ],
)
def test_parse_good_rules(text: str, tool: str, specifier: str | None) -> None:
    rule = parse_rule(text)
    assert rule == Rule(tool=tool, specifier=specifier, text=text.strip())


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "Bash(",
        "(x)",
        "Bash()",
        "Bash(  )",
        "Bash(git:*",
        "Bash git:*)",
        "Bash((x)",
        "Bash(a))",
        "Bash(:*)",
        "Bash(git * main)",
        "Bash(*git)",
        "Bash(echo 'unterminated)",
        "WebFetch(example.com)",
        "Read(a\x00b)",
        "Ba sh",
        "1Read",
    ],
)
def test_parse_bad_rules(text: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse_rule(text)
    assert caught.value.rule == text
    assert caught.value.reason
    assert repr(text) in str(caught.value)


def test_rules_parse_never_drops_a_bad_rule() -> None:
    with pytest.raises(RuleError) as caught:
        PermissionRules.parse(allow=["Read", "Bash(git:*)"], deny=["Bash(rm:*", "Edit"])
    assert caught.value.rule == "Bash(rm:*"


def test_rules_parse_refuses_a_bare_string() -> None:
    with pytest.raises(TypeError):
        PermissionRules.parse(allow="Bash")


def test_merged_keeps_order_and_drops_duplicates() -> None:
    a = PermissionRules.parse(allow=["Read", "Bash(git:*)"], deny=["Bash(rm:*)"])
    b = PermissionRules.parse(allow=["Bash(git:*)", "Grep"], ask=["Edit"])
    merged = a.merged(b)
    assert [r.text for r in merged.allow] == ["Read", "Bash(git:*)", "Grep"]
    assert [r.text for r in merged.ask] == ["Edit"]
    assert [r.text for r in merged.deny] == ["Bash(rm:*)"]


def test_evaluate_tool_whole_tool_rules() -> None:
    rules = PermissionRules.parse(
        allow=["Read", "WebSearch", "Edit", "mcp__docs"],
        ask=["WebSearch", "Write"],
        deny=["WebSearch", "Bash(rm:*)", "mcp__danger__*"],
    )

    def whole(tool: str) -> Verdict | None:
        decision = evaluate_tool(tool, rules)
        return None if decision is None else decision.verdict

    assert whole("Read") is Verdict.ALLOW
    assert whole("Grep") is Verdict.ALLOW
    assert whole("WebSearch") is Verdict.DENY
    assert whole("Write") is Verdict.ASK
    assert whole("MultiEdit") is Verdict.ALLOW
    assert whole("mcp__docs__search") is Verdict.ALLOW
    assert whole("mcp__danger__x") is Verdict.DENY
    assert whole("mcp__docsextra__x") is None
    assert whole("Bash") is None
    assert whole("WebFetch") is None
    decision = evaluate_tool("WebSearch", rules)
    assert decision is not None
    assert decision.rule == "WebSearch"
    assert decision.reason == "denied by rule WebSearch"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src" / "sub").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a")
    (root / "secrets").mkdir()
    (root / "secrets" / "key").write_text("k")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.py").write_text("x")
    return root


def verdict(tool: str, path: str, root: Path, *, cwd: Path | None = None, **rules: list[str]) -> (
    Verdict
):
    parsed = PermissionRules.parse(**rules)
    return evaluate_path(tool, path, parsed, project_root=root, cwd=cwd).verdict


def test_relative_patterns_are_anchored_at_the_project(project: Path) -> None:
    allow = ["Edit(src/**)"]
    assert verdict("Edit", "src/a.py", project, allow=allow) is Verdict.ALLOW
    assert verdict("Write", str(project / "src/sub/new.py"), project, allow=allow) is Verdict.ALLOW
    assert verdict("Edit", "src", project, allow=allow) is Verdict.ALLOW
    assert verdict("Edit", "srcx/a.py", project, allow=allow) is Verdict.ASK
    assert verdict("Edit", "a.py", project, cwd=project / "src", allow=allow) is Verdict.ALLOW
    assert verdict("Edit", "README", project, allow=allow) is Verdict.ASK


def test_dot_dot_cannot_escape_a_rule(project: Path) -> None:
    allow = ["Edit(src/**)"]
    assert verdict("Edit", "src/../../outside/x.py", project, allow=allow) is Verdict.ASK
    assert verdict("Edit", "src/../secrets/key", project, allow=allow) is Verdict.ASK
    assert verdict("Edit", "../outside/x.py", project, cwd=project / "src", allow=allow) is (
        Verdict.ASK
    )


def test_symlinks_are_resolved(project: Path, tmp_path: Path) -> None:
    (project / "src" / "link").symlink_to(tmp_path / "outside")
    (project / "alias").symlink_to(project / "secrets")
    allow = ["Edit(src/**)", "Read(**)"]
    assert verdict("Edit", "src/link/x.py", project, allow=allow) is Verdict.ASK
    assert verdict("Read", "alias/key", project, allow=allow) is Verdict.ALLOW
    deny = ["Read(secrets/**)"]
    assert verdict("Read", "alias/key", project, allow=allow, deny=deny) is Verdict.DENY


def test_deny_also_matches_the_unresolved_path(project: Path, tmp_path: Path) -> None:
    (project / "private").symlink_to(tmp_path / "outside")
    deny = ["Read(private/**)"]
    assert verdict("Read", "private/x.py", project, allow=["Read"], deny=deny) is Verdict.DENY


def test_star_stays_in_one_segment(project: Path) -> None:
    allow = ["Edit(src/*.py)"]
    assert verdict("Edit", "src/a.py", project, allow=allow) is Verdict.ALLOW
    assert verdict("Edit", "src/sub/b.py", project, allow=allow) is Verdict.ASK
    assert verdict("Edit", "src/a.pyc", project, allow=allow) is Verdict.ASK
    assert verdict("Edit", "src/sub/b.py", project, allow=["Edit(src/**/*.py)"]) is Verdict.ALLOW
    assert verdict("Edit", "src/a.py", project, allow=["Edit(src/?.py)"]) is Verdict.ALLOW
    assert verdict("Edit", "src/a.py", project, allow=["Edit(src/[ab].py)"]) is Verdict.ALLOW
    assert verdict("Edit", "src/a.py", project, allow=["Edit(src/[!a].py)"]) is Verdict.ASK


def test_any_depth_deny(project: Path, tmp_path: Path) -> None:
    deny = ["Read(**/.env)"]
    allow = ["Read"]
    assert verdict("Read", ".env", project, allow=allow, deny=deny) is Verdict.DENY
    assert verdict("Read", "src/sub/.env", project, allow=allow, deny=deny) is Verdict.DENY
    outside = str(tmp_path / "outside" / ".env")
    assert verdict("Read", outside, project, allow=allow, deny=deny) is Verdict.DENY
    assert verdict("Read", "src/.envrc", project, allow=allow, deny=deny) is Verdict.ALLOW


def test_a_denied_directory_covers_its_contents(project: Path) -> None:
    for pattern in ("Read(secrets)", "Read(secrets/)", "Read(./secrets/**)"):
        assert verdict("Read", "secrets/key", project, allow=["Read"], deny=[pattern]) is (
            Verdict.DENY
        ), pattern


def test_absolute_and_home_patterns(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = str((tmp_path / "outside" / "x.py").resolve())
    base = str((tmp_path / "outside").resolve())
    assert verdict("Read", outside, project, allow=[f"Read(/{base}/**)"]) is Verdict.ALLOW
    assert verdict("Read", outside, project, allow=[f"Read({base}/**)"]) is Verdict.ALLOW
    # A `/x` pattern whose first segment is not a root directory is project-relative.
    assert not Path("/aimon-no-such-dir").exists()
    allow = ["Edit(/aimon-no-such-dir/**)"]
    (project / "aimon-no-such-dir").mkdir()
    assert verdict("Edit", "aimon-no-such-dir/f", project, allow=allow) is Verdict.ALLOW
    monkeypatch.setenv("HOME", str(tmp_path / "outside"))
    assert verdict("Read", "~/x.py", project, allow=["Read(~/**)"]) is Verdict.ALLOW
    assert verdict("Read", outside, project, allow=["Read(~/*.py)"]) is Verdict.ALLOW


def test_tool_families(project: Path) -> None:
    allow = ["Read(src/**)"]
    deny = ["Edit(secrets/**)"]
    assert verdict("Grep", "src", project, allow=allow, deny=deny) is Verdict.ALLOW
    assert verdict("Glob", "src/sub", project, allow=allow, deny=deny) is Verdict.ALLOW
    assert verdict("Edit", "src/a.py", project, allow=allow, deny=deny) is Verdict.ASK
    for tool in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
        assert verdict(tool, "secrets/key", project, allow=allow, deny=deny) is Verdict.DENY
    assert verdict("Read", "secrets/key", project, allow=allow, deny=deny) is Verdict.ASK


def test_path_precedence_deny_ask_allow(project: Path) -> None:
    allow = ["Edit", "Edit(src/**)"]
    ask = ["Edit(src/sub/**)"]
    deny = ["Edit(src/sub/secret.py)"]
    assert verdict("Edit", "src/a.py", project, allow=allow, ask=ask, deny=deny) is Verdict.ALLOW
    assert verdict("Edit", "src/sub/b.py", project, allow=allow, ask=ask, deny=deny) is (
        Verdict.ASK
    )
    assert verdict("Edit", "src/sub/secret.py", project, allow=allow, ask=ask, deny=deny) is (
        Verdict.DENY
    )
    assert verdict("Edit", "anything", project, deny=["Edit"], allow=allow) is Verdict.DENY


def test_path_decisions_name_their_rule(project: Path) -> None:
    rules = PermissionRules.parse(deny=["Read(secrets/**)"])
    decision = evaluate_path("Read", "secrets/key", rules, project_root=project)
    assert decision.rule == "Read(secrets/**)"
    assert "Read(secrets/**)" in decision.reason
    unmatched = evaluate_path("Read", "src/a.py", rules, project_root=project)
    assert unmatched.verdict is Verdict.ASK
    assert unmatched.rule is None


def test_nul_byte_is_refused(project: Path) -> None:
    assert verdict("Read", "src/a.py\x00.txt", project, allow=["Read"]) is Verdict.DENY


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "cat a.txt | grep -n foo | sort | uniq -c | head",
        "git status && git diff HEAD~1 -- src",
        "git -C sub log --oneline",
        "git branch -a",
        "git branch --list 'feat/*'",
        "git tag -l 'v1*'",
        "git remote -v",
        "git config --get user.name",
        "rg -n pattern src",
        "find . -name '*.py' -not -path './.venv/*'",
        "sed -n '1,10p' f",
        "echo done 2>&1",
        "env",
        "node --version",
        "test -d src",
        "[[ 3 -lt 4 ]]",
    ],
)
def test_read_only(command: str, tmp_path: Path) -> None:
    # git is read-only only where its repository is vetted: tmp_path has none above it.
    assert is_read_only_command(command, cwd=tmp_path)


@pytest.mark.parametrize(
    "command",
    [
        "git branch new-feature",
        "git branch -m old new",
        "git tag -d v1",
        "git remote add origin x",
        "git config user.name x",
        "git push",
        "git --git-dir=/tmp/x/.git log",
        # Narrowed by S1: sed only as `sed -n Np` / `sed -n N,Mp` (as Codex CLI does).
        "sed -n '1,10p;/x/p' f",
        "sed 's/a/b/g' f",
        "rg -z pattern",
        "sort -o out in",
        "uniq in out",
        "tree -o out",
        "date -s 2020-01-01",
        "file -C -m magic",
        "printf -v x '%s' y",
        "env rm x",
        "python script.py",
        "echo hi > file",
        "ls $HOME",
        "ls; touch x",
        "[ 'a[$(id)]' -eq 1 ]",
        "test -v x",
        "tail -f log | less",
        "/bin/ls",
        "",
    ],
)
def test_not_read_only(command: str, tmp_path: Path) -> None:
    assert not is_read_only_command(command, cwd=tmp_path)
