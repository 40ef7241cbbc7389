"""The OS sandbox in a runtime: set up from the settings or `--sandbox`, asked through the session.

Runtimes are built by `build_runtime` as the command line builds them, with a scripted model.
What needs bubblewrap is skipped, with the reason, where it cannot run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import (
    ApprovalAnswer,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalScope,
    ApprovalWithdrawn,
    parse_agent,
)
from aimon_core.config import TrustStore, load_settings
from aimon_core.config._sandbox import SandboxSettings
from aimon_core.live import LiveSessionEvent
from aimon_core.llm import ScriptedLLMClient, ToolResultBlock, reply, script
from aimon_core.permission import PermissionMode, PermissionPolicy, PermissionRules
from aimon_core.runtime import (
    AgentAssembly,
    RuntimeFlags,
    RuntimeParts,
    RuntimeSetupError,
    build_runtime,
)
from aimon_core.runtime._sandbox import sandbox_setup
from aimon_core.session import (
    MemorySessionLeaseStore,
    MemorySessionRecordStore,
    SessionStore,
    user_config_dir,
)
from aimon_core.shell import SandboxProbe, probe_sandbox

PROBE = probe_sandbox()
needs_bwrap = pytest.mark.skipif(not PROBE.available,
                                 reason=f"the sandbox cannot run here: {PROBE.describe()}")
MISSING = SandboxProbe(bwrap=None, nsenter="/usr/bin/nsenter", missing=("bubblewrap (bwrap)",),
                       install="sudo apt-get install bubblewrap")


def assemble(root: Path, client: ScriptedLLMClient, *, sandbox: bool = True) -> AgentAssembly:
    return build_runtime(root, flags=RuntimeFlags(sandbox=sandbox), parts=RuntimeParts(
        client=client, agent_definition=parse_agent("---\nname: t\n---\nYou test.\n")))


def memory_store() -> SessionStore:
    return SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())


def results(client: ScriptedLLMClient) -> list[str]:
    return [block.text for message in client.requests[-1].messages
            for block in message.content if isinstance(block, ToolResultBlock)]


def bash(command: str, **extra: Any) -> Any:
    return reply("", ("Bash", {"command": command, **extra}))


async def _turn(root: Path, client: ScriptedLLMClient, answer: ApprovalAnswer | None,
                seen: list[LiveSessionEvent]) -> None:
    """Run one turn; `answer` answers every question (None: nobody answers, as print mode)."""
    assembly = assemble(root, client)
    live = await assembly.open_session(memory_store())

    def subscriber(event: LiveSessionEvent) -> None:
        seen.append(event)
        if isinstance(event, ApprovalRequested) and answer is not None:
            live.answer(event.request.id, answer)

    live.subscribe(subscriber, answers=answer is not None)
    try:
        await live.submit("go")
    finally:
        await live.close()
        await assembly.aclose()


def run(root: Path, client: ScriptedLLMClient, answer: ApprovalAnswer | None = None
        ) -> list[LiveSessionEvent]:
    """Run one turn (see `_turn`); return its events."""
    seen: list[LiveSessionEvent] = []
    asyncio.run(_turn(root, client, answer, seen))
    return seen


def project(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "proj", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    return root, outside


def test_a_sandbox_that_cannot_run_is_said_once_with_the_install_command(
        tmp_path: Path) -> None:
    made = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, tmp_path)
    notices: list[str] = []
    setup = sandbox_setup(SandboxSettings(enabled=True), made, notices, MISSING)
    assert setup.config is None and made.sandbox is None
    assert notices == ["The sandbox is on but cannot run here: missing bubblewrap (bwrap); "
                       "install with: sudo apt-get install bubblewrap. Commands run without "
                       "it; the permission rules apply as they are."]
    with pytest.raises(RuntimeSetupError, match=r"failIfUnavailable.*sudo apt-get install"):
        sandbox_setup(SandboxSettings(enabled=True, fail_if_unavailable=True), made, [],
                      MISSING)


def test_a_sandbox_that_is_off_is_not_probed(tmp_path: Path) -> None:
    made = PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, tmp_path)
    assert sandbox_setup(SandboxSettings(), made, [], MISSING).probe is None


@needs_bwrap
def test_with_the_flag_a_command_runs_sandboxed_without_a_question(tmp_path: Path) -> None:
    root, outside = project(tmp_path)
    client = script(bash(f"touch {outside}/x; echo pwned > .git-hook; echo done"),
                    reply("ok"))
    seen = run(root, client)  # nobody answers: it would be refused if it were asked
    assert not any(isinstance(e, ApprovalRequested) for e in seen)
    [text] = results(client)
    assert "Read-only file system" in text and "done" in text
    assert not (outside / "x").exists() and (root / ".git-hook").exists()


@needs_bwrap
def test_leaving_the_sandbox_is_asked_and_runs_outside_once_approved(tmp_path: Path) -> None:
    root, outside = project(tmp_path)
    client = script(bash(f"touch {outside}/x", dangerouslyDisableSandbox=True), reply("ok"))
    seen = run(root, client, ApprovalAnswer(allowed=True))
    [asked] = [e.request for e in seen if isinstance(e, ApprovalRequested)]
    assert asked.tool_name == "Bash" and "outside the OS sandbox" in asked.reason
    assert (outside / "x").exists()


@needs_bwrap
def test_leaving_the_sandbox_in_print_mode_is_refused(tmp_path: Path) -> None:
    root, outside = project(tmp_path)
    client = script(bash(f"touch {outside}/x", dangerouslyDisableSandbox=True), reply("ok"))
    run(root, client)
    assert not (outside / "x").exists()
    assert "outside the OS sandbox" in results(client)[0]


async def _server(hits: list[str]) -> asyncio.Server:
    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append((await reader.readline()).decode().split()[1])
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        writer.close()

    return await asyncio.start_server(record, "127.0.0.1", 0)


FETCH = ("env -u NO_PROXY -u no_proxy python3 -c \"import urllib.request as u; "
         "print(u.urlopen('http://127.0.0.1:{port}/{path}', timeout=10).read())\"")


def network_turn(root: Path, answer: ApprovalAnswer | None
                 ) -> tuple[list[LiveSessionEvent], list[str], ScriptedLLMClient]:
    """Fetch from a loopback server twice, in two commands of one turn."""
    hits: list[str] = []
    seen: list[LiveSessionEvent] = []

    async def main() -> ScriptedLLMClient:
        server = await _server(hits)
        port = server.sockets[0].getsockname()[1]
        client = script(bash(FETCH.format(port=port, path="one")),
                        bash(FETCH.format(port=port, path="two")), reply("ok"))
        try:
            await _turn(root, client, answer, seen)
        finally:
            server.close()
        return client

    client = asyncio.run(main())
    return seen, hits, client


@needs_bwrap
def test_a_new_domain_is_asked_through_the_session_once(tmp_path: Path) -> None:
    root, _ = project(tmp_path)
    seen, hits, _ = network_turn(root, ApprovalAnswer(allowed=True,
                                                      scope=ApprovalScope.SESSION))
    questions = [e.request for e in seen if isinstance(e, ApprovalRequested)]
    assert [(q.tool_name, q.suggested_rule) for q in questions] == [
        ("WebFetch", "WebFetch(domain:127.0.0.1)")]
    assert questions[0].label.startswith("Network(127.0.0.1:")
    assert any(isinstance(e, ApprovalResolved) and e.remembered for e in seen)
    assert hits == ["/one", "/two"]


@needs_bwrap
def test_a_new_domain_in_print_mode_is_refused_and_named(tmp_path: Path) -> None:
    root, _ = project(tmp_path)
    seen, hits, client = network_turn(root, None)
    assert hits == []
    assert not any(isinstance(e, ApprovalRequested) for e in seen)
    first = results(client)[0]
    assert "network access refused: 127.0.0.1:" in first
    assert "nobody can be asked (print mode)" in first


@needs_bwrap
def test_an_allowed_domain_in_the_settings_is_reached_without_a_question(
        tmp_path: Path) -> None:
    root, _ = project(tmp_path)
    config = user_config_dir() / "settings.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"sandbox": {"network": {"allowedDomains": ["127.0.0.1"]}}}))
    seen, hits, _ = network_turn(root, None)
    assert hits == ["/one", "/two"]
    assert not any(isinstance(e, ApprovalRequested) for e in seen)


def test_a_reload_that_changes_the_sandbox_says_it_applies_at_the_next_start(
        tmp_path: Path) -> None:
    root, _ = project(tmp_path)
    assembly = assemble(root, script(reply("ok")), sandbox=False)
    config = user_config_dir() / "settings.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"sandbox": {"enabled": True}}))
    loaded = load_settings(root, trust_store=TrustStore())
    notes = assembly.apply_settings(loaded, on_error=lambda exc: None)
    assert "sandbox changes take effect when aimon starts again" in notes
    assert assembly.policy.sandbox is None


@needs_bwrap
def test_a_network_question_goes_away_with_its_interrupted_command(tmp_path: Path) -> None:
    """Ctrl-C while a command waits for a network answer: its question is withdrawn."""
    root, _ = project(tmp_path)
    seen: list[LiveSessionEvent] = []

    async def main() -> None:
        client = script(bash(FETCH.format(port=9, path="x")), reply("ok"))
        assembly = assemble(root, client)
        live = await assembly.open_session(memory_store())

        def subscriber(event: LiveSessionEvent) -> None:
            seen.append(event)
            if isinstance(event, ApprovalRequested):
                live.interrupt()  # Ctrl-C instead of an answer

        live.subscribe(subscriber, answers=True)
        with contextlib.suppress(asyncio.CancelledError):
            await live.submit("go")
        withdrawn = asyncio.Event()
        live.subscribe(lambda e: withdrawn.set() if isinstance(e, ApprovalWithdrawn) else None)
        if not any(isinstance(e, ApprovalWithdrawn) for e in seen):
            await asyncio.wait_for(withdrawn.wait(), 10)
        await live.close()
        await assembly.aclose()

    asyncio.run(main())
    [asked] = [e.request for e in seen if isinstance(e, ApprovalRequested)]
    assert asked.tool_name == "WebFetch"
    assert any(isinstance(e, ApprovalWithdrawn) and e.request_id == asked.id for e in seen)
