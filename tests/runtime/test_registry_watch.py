"""The settings watch names the file of an edit made before it started watching."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

from aimon_core.llm import reply, script
from aimon_core.runtime import AgentRuntimeRegistry, RuntimeFlags, RuntimeParts


def test_an_edit_between_the_build_and_the_watch_is_named_by_its_file(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    user = Path(os.environ["AIMON_HOME"]) / "config" / "settings.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    told = tmp_path / "config-change.json"
    said: list[str] = []
    # The hook keeps its input and says so; what it says reaches `say`.
    hook = f"cat > {told}; echo '{{\"systemMessage\": \"hook done\"}}'"

    async def scenario() -> None:
        registry = AgentRuntimeRegistry(project, RuntimeFlags(),
                                        parts=RuntimeParts(client=script(reply("hi"))))
        await registry.get()  # the runtime is built from the files as they are now ...
        user.write_text(json.dumps({"hooks": {"ConfigChange": [{"hooks": [
            {"type": "command", "command": hook}]}]}}))  # ... then one of them is edited
        done = asyncio.Event()

        def say(text: str, _style: str) -> None:
            said.append(text)
            if text.endswith("hook done"):  # after the hook's name
                done.set()

        watching = asyncio.create_task(registry.watch(say))
        try:
            async with asyncio.timeout(20):
                await done.wait()
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
            await registry.aclose()

    asyncio.run(scenario())
    event = json.loads(told.read_text())
    assert event["hook_event_name"] == "ConfigChange"
    assert event["source"] == "user_settings" and event["file_path"] == str(user), event
    assert any(text.startswith("settings reloaded") for text in said)


def test_a_reload_whose_edit_was_stamped_earlier_names_the_same_files() -> None:
    """Two quick edits of the user settings: the first event's look saw the second's stamp.
    The second reload is the rest of that edit: named by the same file, not guessed."""
    from aimon_core.runtime._registry import _ChangedFiles

    user, project = Path("/h/config/settings.json"), Path("/p/.aimon/settings.json")
    files = _ChangedFiles({"user": (user, (1, 10)), "project": (project, None)})
    assert files.changed({"user": (user, (1, 10)), "project": (project, None)}) == []
    second = {"user": (user, (3, 12)), "project": (project, None)}
    assert files.changed(second) == [("user", user)]  # the first event, the second's stamp
    assert files.changed(second) == [("user", user)]  # the second event: nothing moved
    both = {"user": (user, (4, 12)), "project": (project, (4, 2))}
    assert files.changed(both) == [("user", user), ("project", project)]
    removed = {"user": (user, (4, 12)), "project": (project, None)}
    assert files.changed(removed) == [("project", project)]
