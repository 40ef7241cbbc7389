"""Signing in to remote MCP servers: the token file, the loopback redirect, a 401 explained.

The OAuth protocol itself (discovery, registration, PKCE, scopes, step-up, refresh, client
credentials) is the SDK's and is checked against the official conformance suite
(tests/conformance, run by .ci/run); here is what aimon adds around it.
"""

from __future__ import annotations

import asyncio
import os
import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from aimon_core.config import HTTPServerConfig, OAuthConfig, check_server
from aimon_core.mcp import MCPOptions, MCPServers, auth_folder, logout
from aimon_core.mcp._auth import (
    CallbackListener,
    SignIn,
    TokenFile,
    auth_file,
    has_browser,
    oauth_provider,
)
from aimon_core.tools import ToolRegistry


def test_tokens_are_kept_per_server_and_url_readable_only_by_the_user() -> None:
    from mcp.shared.auth import OAuthToken

    url = "https://mcp.example/mcp"
    store = TokenFile(auth_file("acme", url), url)
    asyncio.run(store.set_tokens(OAuthToken(access_token="a1", refresh_token="r1")))
    assert store.path.parent == auth_folder() and store.has_tokens()
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    tokens = asyncio.run(store.get_tokens())
    assert (tokens.access_token, tokens.refresh_token) == ("a1", "r1")
    # The same name at another address is another sign-in.
    assert not TokenFile(auth_file("acme", "https://other.example/mcp"),
                         "https://other.example/mcp").has_tokens()
    store.forget_tokens()
    assert not store.has_tokens() and store.path.exists()
    assert logout("acme") == (store.path,) and not store.path.exists()
    assert logout("acme") == ()


def test_a_registered_client_keeps_the_port_of_its_redirect_address() -> None:
    from mcp.shared.auth import OAuthClientInformationFull

    url = "https://mcp.example/mcp"
    store = TokenFile(auth_file("acme", url), url)
    client = OAuthClientInformationFull(client_id="c1",
                                        redirect_uris=["http://127.0.0.1:49152/callback"])
    asyncio.run(store.set_client_info(client))
    assert store.callback_port() == 49152
    assert asyncio.run(store.get_client_info()).client_id == "c1"


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_the_loopback_listener_takes_the_code_once() -> None:
    from mcp.client.auth import OAuthFlowError

    async def main() -> None:
        listener = CallbackListener(_port())
        await listener.start()
        base = listener.redirect_uri
        assert base.startswith("http://127.0.0.1:") and base.endswith("/callback")
        elsewhere = await asyncio.to_thread(fetch, base.replace("/callback", "/other"))
        assert elsewhere[0] == 404
        answer = await asyncio.to_thread(fetch, f"{base}?code=C0DE&state=S7&iss=https://as")
        assert answer[0] == 200 and "signed in" in answer[1]
        result = await listener.wait(5)
        assert (result.code, result.state, result.iss) == ("C0DE", "S7", "https://as")
        refused = CallbackListener(_port())
        await refused.start()
        said = await asyncio.to_thread(fetch, f"{refused.redirect_uri}?error=access_denied")
        assert said[0] == 200 and "refused" in said[1]
        with pytest.raises(OAuthFlowError, match="access_denied"):
            await refused.wait(5)
        late = CallbackListener(_port())
        await late.start()
        with pytest.raises(OAuthFlowError, match=r"nobody signed in within 0\.1 s"):
            await late.wait(0.1)

    asyncio.run(main())


def _port() -> int:
    from aimon_core.mcp._auth import _free_port

    return _free_port()


@pytest.mark.parametrize(("env", "platform_has_one"), [
    ({}, False), ({"BROWSER": "firefox"}, True), ({"DISPLAY": ":0"}, True),
    ({"WAYLAND_DISPLAY": "wayland-0"}, True), ({"TERM": "xterm"}, False)])
def test_a_browser_is_opened_only_where_there_is_one(env: dict[str, str],
                                                     platform_has_one: bool) -> None:
    # Without one, Python's webbrowser would start a text browser in aimon's own terminal.
    import sys

    assert has_browser(env) is (platform_has_one or sys.platform in ("darwin", "win32"))


def test_which_connections_get_the_oauth_client() -> None:
    url = "https://mcp.example/mcp"
    plain = HTTPServerConfig(url=url)
    assert oauth_provider("acme", plain, {}, SignIn()) is None  # nobody signed in: no client
    assert oauth_provider("acme", plain, {}, SignIn(login=True)) is not None
    own = HTTPServerConfig(url=url, headers=(("Authorization", "Bearer ${TOKEN}"),))
    assert oauth_provider("acme", own, {}, SignIn(login=True)) is None
    machine = HTTPServerConfig(url=url, oauth=OAuthConfig(
        client_id="bot", client_secret="${BOT_SECRET}", grant="client_credentials"))
    assert oauth_provider("acme", machine, {"BOT_SECRET": "s3cret"}, SignIn()) is not None


async def _unauthorized_server() -> tuple[asyncio.Server, str]:
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while (await reader.readline()).strip():
            pass
        body = b'{"error":"invalid_token"}'
        writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                     b'WWW-Authenticate: Bearer resource_metadata="http://127.0.0.1/x"\r\n'
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n"
                     b"Connection: close\r\n\r\n" + body)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/mcp"


def test_a_401_is_explained_and_nothing_registered_unasked() -> None:
    async def main() -> str:
        http, url = await _unauthorized_server()
        config = check_server({"type": "http", "url": url}, key="mcpServers.acme", path=None,
                              display="test")
        servers = MCPServers({"acme": config}, tools=ToolRegistry(), roots=lambda: (),
                             env=dict(os.environ), options=MCPOptions(connect_timeout=10.0))
        servers.start()
        try:
            await servers.wait_ready(15)
            [status] = servers.statuses()
            return status.error
        finally:
            await servers.aclose()
            http.close()

    error = asyncio.run(main())
    assert error == ("the server wants you to sign in (HTTP 401): run `aimon mcp login acme` "
                     "(its entry's `oauth` can name a registered client)")
    assert not auth_folder().exists() or not any(auth_folder().iterdir())


def test_the_entry_says_how_to_sign_in_and_is_checked() -> None:
    entry = {"type": "http", "url": "https://mcp.example/mcp", "elicitation": "acceptDefaults",
             "oauth": {"clientId": "aimon", "clientSecret": "${S}", "callbackPort": 8765,
                       "scope": "read write", "clientMetadataUrl": "https://a.example/c.json"}}
    config = check_server(entry, key="mcpServers.acme", path=None, display="t")
    assert isinstance(config, HTTPServerConfig) and config.oauth is not None
    assert (config.oauth.client_id, config.oauth.callback_port, config.elicitation) == (
        "aimon", 8765, "acceptDefaults")
    assert check_server(config.to_json(), key="k", path=None, display="t") == config


@pytest.mark.parametrize(("oauth", "fragment"), [
    ({"clientId": ""}, "oauth.clientId: expected a non-empty string"),
    ({"callbackPort": 70000}, "oauth.callbackPort: expected a port number"),
    ({"grant": "password"}, "oauth.grant: expected authorization_code or client_credentials"),
    ({"grant": "client_credentials", "clientId": "x"}, "needs clientId and either"),
    ({"clientMetadataUrl": "http://a.example/c.json"}, "expected an https:// URL with a path"),
    ({"redirectUri": "x"}, "oauth.redirectUri: unknown key"),
])
def test_a_malformed_oauth_entry_is_refused(oauth: dict[str, object], fragment: str) -> None:
    from aimon_core.config import SettingsError

    with pytest.raises(SettingsError, match=fragment.replace("(", r"\(")):
        check_server({"type": "http", "url": "https://m.example/mcp", "oauth": oauth},
                     key="mcpServers.acme", path=None, display="t")


def test_the_client_secret_is_a_credential_the_model_never_reads() -> None:
    from aimon_core.config import server_credentials

    config = HTTPServerConfig(url="https://m.example/mcp", oauth=OAuthConfig(
        client_id="bot", client_secret="${BOT_SECRET}", grant="client_credentials"))
    assert ("OAUTH_CLIENT_SECRET", "s3cret-value-long") in server_credentials(
        config, {"BOT_SECRET": "s3cret-value-long"})


def test_the_token_folder_follows_aimon_home(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIMON_HOME", str(tmp_path / "home"))
    assert auth_folder() == tmp_path / "home" / "data" / "mcp-auth"
