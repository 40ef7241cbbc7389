"""The provider check before the first prompt: what it says, and that it agrees with the runtime.

`provider_problem` runs before the REPL draws anything; its fast path must never refuse a
configuration the runtime (`choose_provider`) would accept, and its messages are the runtime's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest

from aimon_cli._early import provider_problem, settings_files
from aimon_core.config import settings_paths
from aimon_core.llm import ModelConfigError, choose_provider

from .conftest import AIMON

NO_PROBE = {"AIMON_NO_LOCAL_PROBE": "1"}

# (flags: provider, model, base_url), environment
CASES: list[tuple[tuple[str | None, str | None, str | None], dict[str, str]]] = [
    ((None, None, None), {}),
    ((None, None, None), {"ANTHROPIC_API_KEY": "k"}),
    ((None, None, None), {"OPENAI_API_KEY": "k"}),
    ((None, None, None), {"OPENAI_BASE_URL": "http://x/v1"}),
    ((None, None, None), {"OPENAI_BASE_URL": "http://x/v1", "AIMON_MODEL": "m"}),
    ((None, None, None), {"ANTHROPIC_BASE_URL": "http://x"}),
    ((None, None, None), {"AIMON_PROVIDER": "anthropic"}),
    ((None, None, None), {"AIMON_PROVIDER": "openai", "ANTHROPIC_API_KEY": "k"}),
    ((None, None, None), {"AIMON_PROVIDER": "bogus", "ANTHROPIC_API_KEY": "k"}),
    ((None, None, None), {"AIMON_MODEL": "gpt-5", "ANTHROPIC_API_KEY": "k"}),
    ((None, None, None), {"AIMON_MODEL": "claude-x", "ANTHROPIC_API_KEY": "k"}),
    (("anthropic", None, None), {}),
    (("anthropic", None, None), {"OPENAI_API_KEY": "k"}),
    (("openai", None, "http://x/v1"), {}),
    (("openai", "m", "http://x/v1"), {}),
    ((None, "claude-sonnet-4-5", None), {"OPENAI_API_KEY": "k"}),
    ((None, "gpt-5", None), {"OPENAI_API_KEY": "k"}),
    ((None, "o3", None), {"ANTHROPIC_API_KEY": "k"}),
    ((None, "llama", "http://x/v1"), {}),
    ((None, None, "http://x/v1"), {"AIMON_MODEL": "m"}),
    (("nope", None, None), {"ANTHROPIC_API_KEY": "k"}),
]


@pytest.mark.parametrize(("flags", "env"), CASES)
def test_the_check_says_what_the_runtime_would(
        flags: tuple[str | None, str | None, str | None], env: dict[str, str],
        tmp_path: Path) -> None:
    provider, model, base_url = flags
    try:
        choose_provider(provider=provider, model=model, base_url=base_url, env=env,
                        probe_local=lambda: None)
        expected = None
    except ModelConfigError as exc:
        expected = exc.message
    problem = provider_problem(provider=provider, model=model, base_url=base_url,
                               project_root=tmp_path, env={**env, **NO_PROBE})
    assert problem == expected


def test_a_settings_file_that_names_a_provider_leaves_it_to_the_runtime(tmp_path: Path) -> None:
    (tmp_path / ".aimon").mkdir()
    settings = tmp_path / ".aimon" / "settings.json"
    settings.write_text('{"permissions": {}}')
    assert provider_problem(provider=None, model=None, base_url=None, project_root=tmp_path,
                            env=NO_PROBE) is not None
    settings.write_text('{"provider": "openai", "base_url": "http://x/v1", "model": "m"}')
    assert provider_problem(provider=None, model=None, base_url=None, project_root=tmp_path,
                            env=NO_PROBE) is None


def test_the_files_looked_at_are_the_runtimes_settings_files(tmp_path: Path) -> None:
    assert settings_files(tmp_path, os.environ) == tuple(
        path for _, path in settings_paths(tmp_path))


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")
def test_no_provider_fails_before_any_prompt(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(AIMON_NO_LOCAL_PROBE="1", TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    child = pexpect.spawn(AIMON, [], cwd=str(tmp_path), env=env, dimensions=(40, 120),
                          encoding="utf-8", timeout=15)
    child.expect(pexpect.EOF)
    child.close()
    screen = str(child.before)
    assert "No model provider is configured" in screen
    assert "set ANTHROPIC_API_KEY" in screen
    assert "›" not in screen and "aimon 0." not in screen  # no banner, no prompt glyph
    assert child.exitstatus == 1
