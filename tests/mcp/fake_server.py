"""A tiny MCP server over stdio (newline-delimited JSON-RPC), for tests that need misbehaviour.

    python fake_server.py [--delay SECONDS] [--silent] [--state FILE] [--ready FILE] [--elicit]

Tools: echo {text}, crash {} (exits at once), hang {} (never answers), big {size}; with
`--elicit` also ask {} (asks the client for a form, ASK_SCHEMA, and returns the answer as JSON).
Resources: note://hello. Prompts: greet {name*}. `--delay` sleeps before serving (a slow
start); `--silent` reads requests and never answers; `--state FILE` counts starts in FILE;
`--ready FILE` is written when the delay is over.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}},
                     "required": ["text"]}},
    {"name": "crash", "description": "Exit the server.", "inputSchema": {"type": "object"}},
    {"name": "hang", "description": "Never answer.", "inputSchema": {"type": "object"}},
    {"name": "big", "description": "Return SIZE characters.",
     "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}}},
    {"name": "fail", "description": "Return an error result.", "inputSchema": {"type": "object"}},
]
ASK = {"name": "ask", "description": "Ask the user for a form.",
       "inputSchema": {"type": "object"}}
ASK_SCHEMA = {"type": "object", "required": ["age"], "properties": {
    "name": {"type": "string", "title": "Name", "default": "Ada"},
    "age": {"type": "integer", "description": "in years"},
    "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
    "subscribed": {"type": "boolean", "default": False}}}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(method: str, params: dict[str, Any], starts: int) -> dict[str, Any] | None:
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "fake", "version": "1"}}
    if method == "tools/list":
        return {"tools": [*TOOLS, *([ASK] if "--elicit" in sys.argv else [])]}
    if method == "resources/list":
        return {"resources": [{"uri": "note://hello", "name": "hello", "mimeType": "text/plain"}]}
    if method == "resources/read":
        return {"contents": [{"uri": params["uri"], "mimeType": "text/plain",
                              "text": f"the note at {params['uri']}"}]}
    if method == "prompts/list":
        return {"prompts": [{"name": "greet", "description": "Greet someone.",
                             "arguments": [{"name": "name", "required": True}]}]}
    if method == "prompts/get":
        name = params.get("arguments", {}).get("name", "?")
        return {"messages": [{"role": "user",
                              "content": {"type": "text", "text": f"Say hello to {name}."}}]}
    if method == "ping":
        return {}
    if method == "tools/call":
        return call(params["name"], params.get("arguments") or {}, starts)
    return None


def call(name: str, args: dict[str, Any], starts: int) -> dict[str, Any] | None:
    if name == "crash":
        os._exit(3)
    if name == "hang":
        return None
    if name == "big":
        return {"content": [{"type": "text", "text": "x" * int(args.get("size", 10))}]}
    if name == "fail":
        return {"content": [{"type": "text", "text": "it failed"}], "isError": True}
    if name == "ask":
        send({"jsonrpc": "2.0", "id": "ask-1", "method": "elicitation/create",
              "params": {"message": "Who are you?", "requestedSchema": ASK_SCHEMA}})
        for line in sys.stdin:  # the answer (nothing else comes while a call runs)
            reply = json.loads(line)
            if reply.get("id") == "ask-1":
                return {"content": [{"type": "text",
                                     "text": json.dumps(reply.get("result") or reply)}]}
    return {"content": [{"type": "text", "text": f"echo: {args.get('text')} (start {starts})"}]}


def main(argv: list[str]) -> None:
    delay = float(argv[argv.index("--delay") + 1]) if "--delay" in argv else 0.0
    state = Path(argv[argv.index("--state") + 1]) if "--state" in argv else None
    starts = 1
    if state is not None:
        starts = int(state.read_text() or 0) + 1 if state.exists() else 1
        state.write_text(str(starts))
    time.sleep(delay)
    if "--ready" in argv:
        Path(argv[argv.index("--ready") + 1]).write_text("ready")
    print("fake server ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        if "--silent" in argv or not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        result = answer(message["method"], message.get("params") or {}, starts)
        if result is not None:
            send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        elif message["method"] != "tools/call":
            send({"jsonrpc": "2.0", "id": message["id"],
                  "error": {"code": -32601, "message": f"no method {message['method']}"}})


if __name__ == "__main__":
    main(sys.argv[1:])
