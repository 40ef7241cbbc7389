"""Credentials stay out of the model's commands and out of tool results."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.filesystem import LocalFileSystem
from aimon_core.shell import LocalShell, is_secret_name, model_env, secret_values
from aimon_core.tools import ToolContext, ToolResult, ToolState, builtin_tools, execute_tool

KEY = "sk-ant-test-0123456789abcdef"
TOOLS = {tool.name: tool for tool in builtin_tools()}


@pytest.mark.parametrize(
    "name",
    ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GITHUB_TOKEN",
     "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "AIMON_API_KEY", "STRIPE_SECRET", "TOKEN"],
)
def test_credential_names_are_secret(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "AIMON_HOME", "MAX_TOKENS", "TOKENIZERS"])
def test_ordinary_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_model_env_drops_credentials_but_keeps_passthrough() -> None:
    environ = {"PATH": "/bin", "ANTHROPIC_API_KEY": KEY, "GITHUB_TOKEN": "ghp_x" * 4}
    assert model_env(environ) == {"PATH": "/bin"}
    kept = model_env(environ, passthrough=["GITHUB_TOKEN", "ANTHROPIC_API_KEY"])
    assert kept == {"PATH": "/bin", "GITHUB_TOKEN": "ghp_x" * 4}  # provider keys never pass


def test_secret_values_skip_short_values_and_put_longest_first() -> None:
    environ = {"A_TOKEN": "short", "B_TOKEN": "12345678", "ANTHROPIC_API_KEY": KEY, "X": KEY}
    assert secret_values(environ) == (("ANTHROPIC_API_KEY", KEY), ("B_TOKEN", "12345678"))


def _ctx(project: Path, shell: LocalShell | None = None) -> ToolContext:
    return ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                       shell=shell or LocalShell(), state=ToolState())


def _bash(ctx: ToolContext, command: str) -> ToolResult:
    return asyncio.run(execute_tool(TOOLS["Bash"], {"command": command}, ctx))


def test_printenv_in_bash_shows_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-" + "9" * 20)
    result = _bash(_ctx(tmp_path), "printenv; env; cat /proc/self/environ | tr '\\0' '\\n'")
    assert not result.is_error
    assert "PATH=" in result.text
    assert KEY not in result.text
    assert "ANTHROPIC_API_KEY" not in result.text
    assert "SOME_SERVICE_TOKEN" not in result.text


async def background_output(shell: LocalShell, command: str, cwd: Path) -> str:
    """Run `command` as a background job of `shell`; return all it printed once it ended."""
    shell_id = await shell.start_background(command, cwd=cwd)
    text = ""
    for _ in range(400):
        out = await shell.read_background(shell_id)
        text += out.stdout
        if out.status != "running":
            return text + (await shell.read_background(shell_id)).stdout
        await asyncio.sleep(0.01)
    raise AssertionError("the background command never ended")


def test_background_shell_gets_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)

    async def scenario() -> str:
        shell = LocalShell()
        try:
            return await background_output(shell, "printenv ANTHROPIC_API_KEY; echo end",
                                           tmp_path)
        finally:
            await shell.close()

    assert asyncio.run(scenario()).strip() == "end"


def test_passthrough_keeps_a_named_variable(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_0123456789")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    shell = LocalShell(passthrough=("GITHUB_TOKEN", "ANTHROPIC_API_KEY"))
    result = asyncio.run(shell.run(
        'echo "gh=${#GITHUB_TOKEN} key=${ANTHROPIC_API_KEY:-none}"', cwd=tmp_path, timeout=10))
    assert result.stdout.strip() == "gh=14 key=none"


def test_settings_env_still_reaches_commands(tmp_path: Path) -> None:
    shell = LocalShell(env={"FROM_SETTINGS": "yes"})
    result = asyncio.run(shell.run("echo $FROM_SETTINGS", cwd=tmp_path, timeout=10))
    assert result.stdout.strip() == "yes"


def test_a_key_in_a_file_is_redacted_from_read(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={KEY}\n")
    ctx = _ctx(tmp_path)
    assert ctx.secrets == (("ANTHROPIC_API_KEY", KEY),)
    result = asyncio.run(execute_tool(TOOLS["Read"], {"file_path": str(tmp_path / ".env")}, ctx))
    assert KEY not in result.text
    assert "ANTHROPIC_API_KEY=[REDACTED:ANTHROPIC_API_KEY]" in result.text


def test_explicit_secrets_are_redacted_from_output_and_data(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    ctx = ToolContext(project_root=tmp_path, cwd=tmp_path, fs=ctx.fs, shell=ctx.shell,
                      state=ctx.state, secrets=(("MY_TOKEN", "abcdefgh1234"),))
    result = _bash(ctx, "echo value=abcdefgh1234 >&2; exit 3")
    assert result.is_error
    assert "abcdefgh1234" not in result.text
    assert "value=[REDACTED:MY_TOKEN]" in result.text
    assert "abcdefgh1234" not in repr(result.data)


def test_the_passthrough_setting_is_checked_and_needs_trust() -> None:
    from aimon_core.config import SettingsError
    from aimon_core.config._trust import describe_risks, risky_parts, without_risky
    from aimon_core.config._validate import check_layer

    values = check_layer({"shellEnvPassthrough": ["GITHUB_TOKEN"]}, path=None, display="x")
    assert values.shell_env_passthrough == ("GITHUB_TOKEN",)
    assert risky_parts(values) == {"shellEnvPassthrough": ["GITHUB_TOKEN"]}
    assert describe_risks(values) == ["lets tool commands see the credentials GITHUB_TOKEN"]
    assert without_risky(values).shell_env_passthrough == ()
    with pytest.raises(SettingsError, match="shellEnvPassthrough"):
        check_layer({"shellEnvPassthrough": ["A=B"]}, path=None, display="x")


SETTINGS_ENV = {"ANTHROPIC_API_KEY": KEY, "GITHUB_TOKEN": "ghp_" + "S3ttings" * 5,
                "DATABASE_URL": "postgres://app:pw-settings-123@db/app", "FROM_SETTINGS": "yes"}


@pytest.mark.parametrize("passthrough", [(), tuple(SETTINGS_ENV)])
@pytest.mark.parametrize("background", [False, True])
def test_credentials_in_settings_env_follow_the_same_rule(
        tmp_path: Path, passthrough: tuple[str, ...], background: bool) -> None:
    """A provider key put in settings `env` never reaches a command; any other credential
    there only when shellEnvPassthrough names it; ordinary variables always."""
    shell = LocalShell(env=SETTINGS_ENV, passthrough=passthrough)

    async def scenario() -> str:
        command = "env; echo end"
        if not background:
            return (await shell.run(command, cwd=tmp_path, timeout=10)).stdout
        return await background_output(shell, command, tmp_path)

    try:
        printed = asyncio.run(scenario())
    finally:
        asyncio.run(shell.close())
    assert "FROM_SETTINGS=yes" in printed
    assert KEY not in printed
    for name in ("GITHUB_TOKEN", "DATABASE_URL"):
        assert (f"{name}={SETTINGS_ENV[name]}" in printed) == bool(passthrough)


def test_a_call_s_own_env_cannot_carry_a_provider_key(tmp_path: Path) -> None:
    shell = LocalShell()
    result = asyncio.run(shell.run("env", cwd=tmp_path, timeout=10,
                                   env={"ANTHROPIC_API_KEY": KEY, "PLAIN": "1"}))
    assert "PLAIN=1" in result.stdout
    assert KEY not in result.stdout
