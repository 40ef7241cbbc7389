"""Signing in to remote MCP servers: OAuth as the MCP authorization spec has it, on the SDK.

The `mcp` SDK's client auth does the protocol (protected-resource and authorization-server
metadata discovery, dynamic client registration, PKCE, scopes from `WWW-Authenticate`, step-up
on `insufficient_scope`, token refresh, the client-credentials grant); this module gives it
what a terminal program has: a token file per server in aimon's data folder (0600), a browser
where there is one (the address printed otherwise) and a loopback listener for the redirect.

Nothing opens a browser unasked: a server that wants authorization and has no tokens yet is
reported ("run `aimon mcp login NAME`"); once signed in, a new authorization the server asks
for later (more scopes, an expired refresh token) opens the browser again, in print mode too.
A `client_credentials` grant signs in as the program itself, with no browser, whenever needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from aimon_core.config import HTTPServerConfig, OAuthConfig, expand

log = logging.getLogger(__name__)

AUTH_DIR = "mcp-auth"
# How long a sign-in waits for the browser to come back (AIMON_MCP_LOGIN_TIMEOUT, seconds).
LOGIN_TIMEOUT = 300.0
_PAGE = ("<!doctype html><meta charset=utf-8><title>aimon</title>"
         "<p>{text}</p><p>You can close this window.</p>")

Notify = Callable[[str], None]


def auth_folder() -> Path:
    """Return the folder of the token files: aimon's data folder (AIMON_HOME aware)."""
    from aimon_core.session import user_data_dir

    return user_data_dir() / AUTH_DIR


def auth_file(name: str, url: str) -> Path:
    """Return the token file of server `name` at `url` (another URL: another file)."""
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return auth_folder() / f"{name}-{digest}.json"


class TokenFile:
    """The SDK's TokenStorage in one JSON file (0600): tokens, the client, its callback port.

    A pre-registered client (`fixed`, from the entry's `oauth`) is given to the SDK instead of
    the stored one, so a changed client id or secret in the settings takes effect.
    """

    def __init__(self, path: Path, url: str, fixed: Any = None) -> None:
        self.path = path
        self.url = url
        self._fixed = fixed

    def read(self) -> dict[str, Any]:
        """Return what the file holds for this URL ({} when nothing, or another URL's)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("url") == self.url else {}

    def _write(self, **changes: Any) -> None:
        from aimon_core._atomic import private_dir, write_atomic

        data = {**self.read(), "url": self.url, **changes}
        private_dir(self.path.parent, tighten=True)
        write_atomic(self.path, json.dumps(data, indent=1).encode(), mode=0o600)

    def forget_tokens(self) -> None:
        """Drop the tokens (the registered client stays)."""
        data = self.read()
        if data.pop("tokens", None) is not None:
            self._write(tokens=None)

    def has_tokens(self) -> bool:
        """Tell whether someone signed in to this server before (tokens are kept)."""
        return bool(self.read().get("tokens"))

    def callback_port(self) -> int | None:
        """Return the port the registered redirect address names, if a client was registered."""
        port = self.read().get("callbackPort")
        return port if isinstance(port, int) else None

    async def get_tokens(self) -> Any:
        """Return the stored tokens (the SDK's OAuthToken), or None."""
        from mcp.shared.auth import OAuthToken

        tokens = self.read().get("tokens")
        return None if not tokens else OAuthToken.model_validate(tokens)

    async def set_tokens(self, tokens: Any) -> None:
        """Keep new tokens."""
        self._write(tokens=tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> Any:
        """Return the registered client (the pre-registered one if the entry names it)."""
        from mcp.shared.auth import OAuthClientInformationFull

        if self._fixed is not None:
            return self._fixed
        client = self.read().get("client")
        return None if not client else OAuthClientInformationFull.model_validate(client)

    async def set_client_info(self, client_info: Any) -> None:
        """Keep a registered client, with the port its redirect address names."""
        if self._fixed is not None:
            return
        redirect = (client_info.redirect_uris or [None])[0]
        port = urlsplit(str(redirect)).port if redirect is not None else None
        self._write(client=client_info.model_dump(mode="json", exclude_none=True),
                    callbackPort=port)


def logout(name: str) -> tuple[Path, ...]:
    """Forget every sign-in to server `name`; return the files removed."""
    folder = auth_folder()
    removed = []
    for path in sorted(folder.glob(f"{name}-*.json")) if folder.is_dir() else ():
        if path.name[len(name) + 1 : -len(".json")].isalnum():
            path.unlink(missing_ok=True)
            removed.append(path)
    return tuple(removed)


def has_browser(environ: Mapping[str, str]) -> bool:
    """Tell whether a browser can be opened: one named in $BROWSER, or a desktop.

    Without a display Python's `webbrowser` would start a text browser in this terminal.
    """
    return bool(environ.get("BROWSER") or sys.platform in ("darwin", "win32")
                or environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def open_browser(url: str) -> bool:
    """Open `url` in the user's browser; False when none could be opened."""
    import webbrowser

    try:
        return webbrowser.open(url)
    except webbrowser.Error:
        return False


class CallbackListener:
    """The loopback address the authorization server sends the browser back to, once."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[Any] | None = None

    @property
    def redirect_uri(self) -> str:
        """Return the redirect address (RFC 8252: a native app's loopback address)."""
        return f"http://127.0.0.1:{self.port}/callback"

    async def start(self) -> None:
        """Listen (once; again after `close`)."""
        if self._server is not None:
            return
        self._result = asyncio.get_running_loop().create_future()
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def wait(self, seconds: float) -> Any:
        """Return the SDK's AuthorizationCodeResult once the browser comes back."""
        from mcp.client.auth import OAuthFlowError

        assert self._result is not None, "start() first"
        try:
            return await asyncio.wait_for(asyncio.shield(self._result), seconds)
        except TimeoutError:
            raise OAuthFlowError(f"nobody signed in within {seconds:g} s") from None
        finally:
            self.close()

    def close(self) -> None:
        """Stop listening."""
        server, self._server = self._server, None
        if server is not None:
            server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)).strip():
                pass  # the headers
            status, text = self._take(line)
        except (TimeoutError, OSError, ValueError):
            status, text = "400 Bad Request", "aimon could not read this request."
        body = _PAGE.format(text=text).encode()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        with contextlib.suppress(OSError):
            await writer.drain()
            writer.close()

    def _take(self, request_line: str) -> tuple[str, str]:
        from mcp.client.auth import AuthorizationCodeResult, OAuthFlowError

        parts = request_line.split()
        target = urlsplit(parts[1]) if len(parts) >= 2 else None
        if target is None or target.path != "/callback":
            return "404 Not Found", "Not found."
        query = {k: v[0] for k, v in parse_qs(target.query).items()}
        result = self._result
        if result is None or result.done():
            return "409 Conflict", "This sign-in is over."
        if "error" in query:
            why = query.get("error_description") or query["error"]
            result.set_exception(OAuthFlowError(f"the authorization server refused: {why}"))
            return "200 OK", f"Sign-in refused: {why}"
        if "code" not in query:
            return "400 Bad Request", "No authorization code."
        result.set_result(AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                                  iss=query.get("iss")))
        return "200 OK", "aimon is signed in."


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True, slots=True, kw_only=True)
class SignIn:
    """What a connection may do when its server wants authorization.

    `login`: sign in now even with no tokens kept (`aimon mcp login`). `notify` tells the
    person (the address to open, what happened).
    """

    login: bool = False
    notify: Notify = lambda text: None
    timeout: float = LOGIN_TIMEOUT


def oauth_provider(name: str, config: HTTPServerConfig, env: Mapping[str, str],
                   sign_in: SignIn) -> Any | None:
    """Return the SDK's httpx auth for server `name`; None when none applies yet.

    None: the entry sends its own `Authorization` header, or nobody signed in to the server
    and this is no login (a 401 is then explained, and no client is registered unasked).
    """
    if any(key.lower() == "authorization" for key, _ in config.headers):
        return None
    url = expand(config.url, env)
    oauth = config.oauth or OAuthConfig()
    if oauth.grant == "client_credentials":
        return _client_credentials(url, oauth, env)
    store = TokenFile(auth_file(name, url), url)
    if not sign_in.login and not store.has_tokens():
        return None
    return _authorization_code(name, url, oauth, store, env, sign_in)


def _authorization_code(name: str, url: str, oauth: OAuthConfig, store: TokenFile,
                        env: Mapping[str, str], sign_in: SignIn) -> Any:
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    port = oauth.callback_port or store.callback_port() or _free_port()
    listener = CallbackListener(port)
    secret = expand(oauth.client_secret, env) if oauth.client_secret else None
    if oauth.client_id is not None:
        store = TokenFile(store.path, url, fixed=OAuthClientInformationFull(
            client_id=oauth.client_id, client_secret=secret,
            redirect_uris=[listener.redirect_uri],  # type: ignore[list-item]
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
            grant_types=["authorization_code", "refresh_token"]))
    metadata = OAuthClientMetadata(
        client_name="aimon", redirect_uris=[listener.redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"], scope=oauth.scope)
    browser = has_browser(env)

    async def redirect(address: str) -> None:
        await listener.start()
        opened = browser and await asyncio.to_thread(open_browser, address)
        where = "in your browser" if opened else "in a browser"
        sign_in.notify(f"MCP server {name} wants you to sign in: open {where}\n  {address}")

    async def callback() -> Any:
        result = await listener.wait(sign_in.timeout)
        sign_in.notify(f"MCP server {name}: signed in")
        return result

    return OAuthClientProvider(url, metadata, store, redirect_handler=redirect,
                               callback_handler=callback,
                               client_metadata_url=oauth.client_metadata_url)


def _client_credentials(url: str, oauth: OAuthConfig, env: Mapping[str, str]) -> Any:
    import warnings

    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    from mcp.shared.exceptions import MCPDeprecationWarning

    assert oauth.client_id is not None  # checked when the settings were read
    store = TokenFile(auth_file(f"cc-{oauth.client_id[:24]}", url), url)
    with warnings.catch_warnings():
        # Without `issuer` the SDK warns that whichever authorization server the MCP server
        # names gets the credentials; that is what the entry asked for (set `issuer` to pin it).
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if oauth.private_key_file is not None:
            key = Path(expand(oauth.private_key_file, env)).expanduser().read_text()
            signed = SignedJWTParameters(issuer=oauth.client_id, subject=oauth.client_id,
                                         signing_key=key,
                                         signing_algorithm=oauth.signing_algorithm)
            return PrivateKeyJWTOAuthProvider(
                url, store, oauth.client_id, signed.create_assertion_provider(),
                scope=oauth.scope, issuer=oauth.issuer)
        return ClientCredentialsOAuthProvider(
            url, store, oauth.client_id, expand(oauth.client_secret or "", env),
            scope=oauth.scope, issuer=oauth.issuer)


def login_timeout(env: Mapping[str, str]) -> float:
    """Return how long a sign-in waits for the browser (AIMON_MCP_LOGIN_TIMEOUT)."""
    try:
        return max(1.0, float(env.get("AIMON_MCP_LOGIN_TIMEOUT", LOGIN_TIMEOUT)))
    except ValueError:
        return LOGIN_TIMEOUT
