"""The README's library example runs as written, against the loopback model server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

README = Path(__file__).resolve().parents[2] / "README.md"


def library_example() -> str:
    section = README.read_text().split("## Using aimon_core from Python", 1)[1]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, "the README lost its library example"
    return found.group(1)


def test_the_library_example_is_at_most_fifteen_lines_of_public_names() -> None:
    code = [line for line in library_example().splitlines() if line.strip()]
    assert len(code) <= 15, len(code)
    imports = [line for line in code if "import" in line]
    assert not any("._" in line for line in imports)
    # The library's own names come from its front door, `aimon_core` itself.
    assert [line for line in imports if "aimon_core" in line] == [
        "from aimon_core import RuntimeParts, build_runtime, tool"]


def test_the_library_example_runs_with_its_custom_tool(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "README.md").write_text("one two three four\n")
    with LoopbackModelServer() as server:
        server.add(Reply(tool_calls=(ScriptedToolCall(name="word_count",
                                                      input={"path": "README.md"}),)),
                   Reply(text="README.md has 4 words."))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.base_url,
                   AIMON_MODEL="claude-sonnet-5-5", AIMON_NO_LOCAL_PROBE="1")
        done = subprocess.run([sys.executable, "-c", library_example()], cwd=project, env=env,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.rstrip().endswith("README.md has 4 words.")
        sent = server.requests[-1].body["messages"][-1]["content"][0]
        assert sent["type"] == "tool_result" and "4 words" in str(sent["content"])
        tools = [t["name"] for t in server.requests[0].body["tools"]]
        assert "word_count" in tools and "Bash" in tools
