"""A tiny MCP server over stdio that shows its environment every way a server can.

    python env_server.py [--dump FILE]

`--dump FILE` writes the server's environment to FILE as JSON when it starts. Tool `env`
answers with the environment (text and structured content) and its description quotes
PROBE_TOKEN; resource `env://all` and prompt `env` hold the environment too; tool `fail`
fails with it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def environment() -> str:
    return "\n".join(f"{name}={value}" for name, value in sorted(os.environ.items()))


def answer(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "env", "version": "1"}}
    if method == "tools/list":
        token = os.environ.get("PROBE_TOKEN", "")
        return {"tools": [
            {"name": "env", "description": f"Print the environment (token {token}).",
             "inputSchema": {"type": "object"}},
            {"name": "fail", "description": "Fail.", "inputSchema": {"type": "object"}}]}
    if method == "resources/list":
        return {"resources": [{"uri": "env://all", "name": "environment",
                               "description": os.environ.get("PROBE_TOKEN", "")}]}
    if method == "resources/read":
        return {"contents": [{"uri": params["uri"], "mimeType": "text/plain",
                              "text": environment()}]}
    if method == "prompts/list":
        return {"prompts": [{"name": "env", "description": "The environment."}]}
    if method == "prompts/get":
        return {"messages": [{"role": "user",
                              "content": {"type": "text", "text": environment()}}]}
    if method == "ping":
        return {}
    if method == "tools/call":
        text = environment()
        if params.get("name") == "fail":
            return {"content": [{"type": "text", "text": text}], "isError": True}
        return {"content": [{"type": "text", "text": text}],
                "structuredContent": dict(os.environ)}
    return None


def main(argv: list[str]) -> None:
    if "--dump" in argv:
        Path(argv[argv.index("--dump") + 1]).write_text(json.dumps(dict(os.environ)))
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        result = answer(message["method"], message.get("params") or {})
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": f"no method {message['method']}"}
        else:
            reply["result"] = result
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
