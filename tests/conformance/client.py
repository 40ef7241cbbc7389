"""aimon as the client under test of the official MCP conformance suite's client scenarios.

The suite (`@modelcontextprotocol/conformance`) starts a server for one scenario and runs
`python client.py SERVER_URL` with MCP_CONFORMANCE_SCENARIO (and, for some, the
MCP_CONFORMANCE_CONTEXT credentials) set. This script does what aimon does for a person, with
aimon's own code and nothing of its own that speaks MCP: the server is an entry as a user
writes it (`oauth` and `elicitation` keys from the scenario's context), a sign-in runs
`aimon_core.mcp.login` (what `aimon mcp login NAME` runs), and the tool call goes through
`MCPServers`, the runtime's MCP tools, with a session that nobody answers (print mode). The
browser is `browser.py` beside it, named in $BROWSER as a person's would be: it opens the
authorization page and follows the redirect back to aimon's loopback listener.

Run by tests/conformance/run.sh (every client scenario that applies), which `.ci/run` runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

# The tool each scenario's server offers and checks (None: no call needed; the auth
# scenarios' servers offer one tool, called with no arguments).
TOOL_CALLS: dict[str, tuple[str, dict[str, Any]] | None] = {
    "initialize": None,
    "tools_call": ("add_numbers", {"a": 5, "b": 3}),
    "elicitation-sep1034-client-defaults": ("test_client_elicitation_defaults", {}),
    "sse-retry": ("test_reconnection", {}),
}


def server_entry(url: str, scenario: str, context: dict[str, Any], work: Path) -> dict[str, Any]:
    """Return the `mcpServers` entry a user would write for this scenario's server."""
    entry: dict[str, Any] = {"type": "http", "url": url}
    if scenario.startswith("elicitation"):
        entry["elicitation"] = "acceptDefaults"  # print mode: nobody answers the form
    oauth: dict[str, Any] = {}
    if "client_id" in context:
        oauth["clientId"] = context["client_id"]
    if "client_secret" in context:
        oauth["clientSecret"] = context["client_secret"]
    if scenario.startswith("auth/client-credentials"):
        oauth["grant"] = "client_credentials"
        if "private_key_pem" in context:
            key = work / "client-key.pem"
            key.write_text(context["private_key_pem"])
            oauth["privateKeyFile"] = str(key)
            oauth["signingAlgorithm"] = context.get("signing_algorithm", "ES256")
    if scenario == "auth/basic-cimd":
        # Where an organisation publishes aimon's client metadata document; the scenario's
        # authorization server knows this one without fetching it.
        oauth["clientMetadataUrl"] = "https://conformance-test.local/client-metadata.json"
    if oauth:
        entry["oauth"] = oauth
    return entry


async def run(url: str, scenario: str, context: dict[str, Any], work: Path) -> int:
    from aimon_core.agent import Turn
    from aimon_core.config import check_server
    from aimon_core.mcp import MCPConnectionError, MCPOptions, MCPServers, login
    from aimon_core.tools import ToolRegistry

    config = check_server(server_entry(url, scenario, context, work), key="mcpServers.conf",
                          path=None, display="conformance")
    env = dict(os.environ)
    if scenario.startswith("auth/") and not scenario.startswith("auth/client-credentials"):
        try:
            print(await login("conf", config, env=env, notify=print, seconds=30.0), flush=True)
        except MCPConnectionError as exc:
            print(f"login: {exc}", file=sys.stderr)
            return 1
    tools = ToolRegistry()
    servers = MCPServers({"conf": config}, tools=tools, roots=lambda: (work,), env=env,
                         notify=print, options=MCPOptions(connect_timeout=30.0))
    servers.start()
    try:
        await servers.wait_ready(35.0)
        [status] = servers.statuses()
        print(f"conf: {status.phase.value}, {status.tools} tools {status.error}", flush=True)
        call = TOOL_CALLS.get(scenario)
        if call is None and scenario.startswith("auth/"):
            offered = [remote.name for _, offer in servers.connected() for remote in offer.tools]
            call = (offered[0], {}) if offered else None
        if call is not None:
            # A session with nobody to answer, as in print mode: `Turn.ask` is None.
            result = await servers.call_tool("conf", call[0], call[1], turn=Turn())
            print(f"{call[0]}: {'error: ' if result.is_error else ''}{result.text[:300]}")
        return 0 if status.error == "" else 1
    finally:
        await servers.aclose()


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="aimon-conformance-") as folder:
        work = Path(folder)
        # A person's own folders: tokens in aimon's data folder, the browser in $BROWSER.
        os.environ["AIMON_HOME"] = str(work / "aimon-home")
        # $BROWSER names one program (Python's webbrowser runs it with the address).
        browser = work / "browser"
        page = Path(__file__).with_name("browser.py")
        browser.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} "
                           f"{shlex.quote(str(page))} \"$@\"\n")
        browser.chmod(0o755)
        os.environ["BROWSER"] = str(browser)
        return asyncio.run(run(url, scenario, context, work))


if __name__ == "__main__":
    sys.exit(main())
