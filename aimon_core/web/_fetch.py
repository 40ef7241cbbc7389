"""Fetch a page for the model: httpx, HTML to Markdown (markdownify), caps, a short cache.

A redirect to another host is reported, never followed: the permission rules decided on
the host the model named, and the next host is the model's to ask for (as Claude Code does).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

MAX_BYTES = 5 * 1024 * 1024
"""The most bytes read of one response; the rest is not downloaded."""
MAX_MARKDOWN = 100_000
"""The most characters of Markdown the model is given of one page."""
MAX_REDIRECTS = 5
TIMEOUT = 30.0
TOTAL_SECONDS = 60.0
CACHE_SECONDS = 15 * 60
_DROPPED = ("script", "style", "noscript", "template", "iframe", "svg", "canvas", "head")
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml",
               "application/javascript", "application/ld+json", "application/rss+xml",
               "application/atom+xml")
_USER_AGENT = "aimon-webfetch/0.1 (a coding agent; fetched at a user's request)"


class FetchError(Exception):
    """A page could not be fetched or read; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Page:
    """What a fetch got: the final URL, its status, and the text as Markdown."""

    url: str
    status: int
    content_type: str
    markdown: str
    truncated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Redirected:
    """The server sent the request to another host: reported, not followed."""

    url: str
    location: str
    status: int


Fetched = Page | Redirected


class PageCache:
    """Pages fetched in the last `seconds`, by URL (the tool holds none: the runtime does)."""

    def __init__(self, seconds: float = CACHE_SECONDS, size: int = 64,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.size = size
        self._clock = clock
        self._pages: OrderedDict[str, tuple[float, Fetched]] = OrderedDict()

    def get(self, url: str) -> Fetched | None:
        """Return the cached result for `url`, if it is fresh."""
        found = self._pages.get(url)
        if found is None:
            return None
        if self._clock() - found[0] > self.seconds:
            del self._pages[url]
            return None
        return found[1]

    def put(self, url: str, fetched: Fetched) -> None:
        """Keep `fetched` for `url`; the oldest entry goes when the cache is full."""
        self._pages[url] = (self._clock(), fetched)
        self._pages.move_to_end(url)
        while len(self._pages) > self.size:
            self._pages.popitem(last=False)


def to_markdown(html: str, base_url: str = "") -> str:
    """Convert HTML to Markdown: scripts, styles and the head dropped, links kept."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(strip=True) if soup.title is not None else ""
    for tag in soup(list(_DROPPED)):
        tag.decompose()
    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    lines = [line.rstrip() for line in text.splitlines()]
    body = "\n".join(lines)
    while "\n\n\n" in body:
        body = body.replace("\n\n\n", "\n\n")
    return (f"# {title}\n\n" if title else "") + body.strip()


def same_host(url: str, other: str) -> bool:
    """Tell whether two URLs name the same host (scheme and port may differ)."""
    from aimon_core.tools import url_host

    first, second = url_host(url), url_host(other)
    return first is not None and second is not None and first[0] == second[0]


def checked_url(url: str) -> str:
    """Return `url` if httpx would reach the host the permission rules saw, else raise.

    An http(s) URL only, without user name or password; where the standard library's parse
    and httpx's disagree on the host, the URL is refused rather than guessed at.
    """
    import httpx2

    from aimon_core.tools import url_host

    found = url_host(url)
    if found is None:
        raise FetchError(f"not an http or https URL: {url!r}")
    try:
        parsed = httpx2.URL(url.strip())
    except (httpx2.InvalidURL, ValueError) as exc:
        raise FetchError(f"not a valid URL: {exc}") from None
    if parsed.userinfo:
        raise FetchError("a URL with a user name or password is not fetched")
    if parsed.host.lower().rstrip(".") != found[0]:
        raise FetchError(f"the URL's host is ambiguous ({parsed.host!r} or {found[0]!r})")
    return str(parsed)


async def fetch(url: str, *, transport: object | None = None,
                total_seconds: float = TOTAL_SECONDS) -> Fetched:
    """Fetch `url`, following redirects on the same host only; raise FetchError.

    The whole fetch takes `total_seconds` at most (a server that drips bytes is cut off).
    """
    try:
        async with asyncio.timeout(total_seconds):
            return await _fetch(url, transport)
    except TimeoutError:
        raise FetchError(f"no complete answer within {total_seconds:g} s") from None


async def _fetch(url: str, transport: object | None) -> Fetched:
    import httpx2

    current = checked_url(url)
    kwargs: dict[str, object] = {"timeout": TIMEOUT, "follow_redirects": False,
                                 "headers": {"User-Agent": _USER_AGENT,
                                             "Accept": "text/html, text/*;q=0.9, */*;q=0.5"}}
    if transport is not None:
        kwargs["transport"] = transport
    async with httpx2.AsyncClient(**kwargs) as client:  # type: ignore[arg-type]
        for _ in range(MAX_REDIRECTS + 1):
            try:
                async with client.stream("GET", current) as response:
                    if response.is_redirect:
                        if "location" not in response.headers:
                            raise FetchError(f"HTTP {response.status_code} with no Location")
                        location = str(response.url.join(response.headers["location"]))
                        if not same_host(current, location):
                            return Redirected(url=current, location=location,
                                              status=response.status_code)
                        current = checked_url(location)
                        continue
                    return await _read(response, current)
            except httpx2.HTTPError as exc:
                raise FetchError(f"{type(exc).__name__}: {exc}") from None
    raise FetchError(f"more than {MAX_REDIRECTS} redirects")


async def _read(response: object, url: str) -> Page:
    import httpx2

    assert isinstance(response, httpx2.Response)
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind and not kind.startswith(_TEXT_TYPES):
        raise FetchError(f"{url} is {kind}, not text: not fetched")
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) >= MAX_BYTES:
            break
    text = bytes(data[:MAX_BYTES]).decode(response.encoding or "utf-8", errors="replace")
    if kind in ("text/html", "application/xhtml+xml") or (not kind and "<html" in text[:2000]):
        text = await asyncio.to_thread(to_markdown, text, url)  # 5 MB of HTML: seconds
    truncated = len(data) >= MAX_BYTES or len(text) > MAX_MARKDOWN
    return Page(url=url, status=response.status_code, content_type=kind or "unknown",
                markdown=text[:MAX_MARKDOWN], truncated=truncated)
