"""The floor for `aimon -p` on the four-call fix: a bare SDK loop doing the same four calls.

Run (from the project `bench_fix4.py serve` prints, with its environment):
  python bench/bare_loop.py anthropic|openai [MAX_CALLS]

(`bench_fix4.py gaps --bare` runs it with a larger MAX_CALLS, default 8, as the floor of an
iteration.)

Imports only the standard library and the provider SDK: stream a call, run the tools it asks
for (Read: read the file; Edit: replace the text; Bash: run the command), send the results,
until the model answers without a tool call. No permission checks, no session record, no
schema checks, no hooks: what any agent on that SDK costs at least.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4"}
PROMPT = "add(2, 3) should be 5; fix calc.py and run test_calc.py"

_TOOLS = [
    {"name": "Read", "description": "Read a file.", "input_schema": {
        "type": "object", "properties": {"file_path": {"type": "string"}}}},
    {"name": "Edit", "description": "Replace text in a file.", "input_schema": {
        "type": "object", "properties": {"file_path": {"type": "string"},
                                         "old_string": {"type": "string"},
                                         "new_string": {"type": "string"}}}},
    {"name": "Bash", "description": "Run a command.", "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"}}}},
]


def _run_tool(name: str, args: dict[str, Any]) -> str:
    if name == "Read":
        return Path(args["file_path"]).read_text()
    if name == "Edit":
        path = Path(args["file_path"])
        path.write_text(path.read_text().replace(args["old_string"], args["new_string"], 1))
        return "edited"
    done = subprocess.run(["/bin/bash", "-c", args["command"]], capture_output=True, text=True,
                          check=False)
    return done.stdout + done.stderr


async def _bare_anthropic(limit: int) -> None:
    import anthropic

    client = anthropic.AsyncAnthropic(max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for _ in range(limit):
        async with client.messages.stream(model=MODELS["anthropic"], max_tokens=1024,
                                          messages=messages, tools=_TOOLS) as stream:  # type: ignore[arg-type]
            message = await stream.get_final_message()
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        uses = [b for b in message.content if b.type == "tool_use"]
        if not uses:
            break
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": _run_tool(b.name, b.input)}
            for b in uses]})
    await client.close()


async def _bare_openai(limit: int) -> None:
    import openai

    client = openai.AsyncOpenAI(max_retries=0)
    tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                               "parameters": t["input_schema"]}} for t in _TOOLS]
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    for _ in range(limit):
        stream = await client.chat.completions.create(model=MODELS["openai"], messages=messages,  # type: ignore[arg-type]
                                                      tools=tools, stream=True)  # type: ignore[arg-type]
        calls: dict[int, dict[str, str]] = {}
        async for chunk in stream:
            if not chunk.choices:
                continue
            for call in chunk.choices[0].delta.tool_calls or ():
                entry = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] = call.id or entry["id"]
                if call.function is not None:
                    entry["name"] = call.function.name or entry["name"]
                    entry["arguments"] += call.function.arguments or ""
        if not calls:
            break
        messages.append({"role": "assistant", "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()]})
        messages += [{"role": "tool", "tool_call_id": c["id"],
                      "content": _run_tool(c["name"], json.loads(c["arguments"]))}
                     for c in calls.values()]
    await client.close()


def bare(provider: str, limit: int = 8) -> None:
    asyncio.run(_bare_anthropic(limit) if provider == "anthropic" else _bare_openai(limit))


def main() -> None:
    provider = sys.argv[1] if len(sys.argv) > 1 else "anthropic"
    bare(provider, int(sys.argv[2]) if len(sys.argv) > 2 else 8)


if __name__ == "__main__":
    main()
