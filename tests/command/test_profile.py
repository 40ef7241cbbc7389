"""/profile: list the stored accounts; switch the session to one (its endpoint, model, key)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.agent import StopCause
from aimon_core.credentials import LocalCredentialStore, Profile, Profiles
from aimon_core.llm import reply
from aimon_core.testing import LoopbackModelServer, Reply
from tests.command.test_model import anthropic, session

KEY = "sk-work-profile-0123456789"


def test_profile_lists_and_switches_the_sessions_client(tmp_path: Path) -> None:
    async def test(server: LoopbackModelServer) -> None:
        async with session(tmp_path, anthropic(reply("from the first account")),
                           "claude-sonnet-4-5") as live:
            empty = await live.submit("/profile")
            assert empty.stop is StopCause.COMMAND and "No profiles yet" in empty.text
            Profiles.default().put(Profile(name="work", provider="openai",
                                           base_url=server.base_url, model="gpt-work"))
            LocalCredentialStore.default().put("work", KEY)
            listed = (await live.submit("/profile")).text
            assert "this session: anthropic, claude-sonnet-4-5" in listed
            assert f"work: openai, {server.base_url}, gpt-work" in listed
            unknown = await live.submit("/profile play")
            assert "no such profile; known: work" in unknown.text
            assert (await live.submit("first")).text == "from the first account"
            switched = await live.submit("/profile work")
            assert "Profile: work (openai, gpt-work)" in switched.text
            answer = await live.submit(f"my key is {KEY}")
            assert answer.text == "from the work account"
            assert live.record.model_choice is not None
            assert live.record.model_choice.provider == "openai"

    async def main() -> None:
        with LoopbackModelServer(provider="openai") as server:
            server.add(Reply(text="from the work account"))
            await test(server)
            [request] = server.requests
            assert request.headers["authorization"] == f"Bearer {KEY}"
            assert request.body["model"] == "gpt-work"
            assert KEY not in str(request.body)  # the profile's key is redacted too

    asyncio.run(main())
