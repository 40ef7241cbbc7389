"""Web search providers: a self-hosted SearXNG, or Brave's hosted Search API.

Chosen by the environment: `AIMON_WEB_SEARCH=searxng` with `AIMON_WEB_SEARCH_URL` (the
instance, JSON output enabled), or `AIMON_WEB_SEARCH=brave` with `BRAVE_API_KEY`
(`AIMON_WEB_SEARCH_URL` overrides the endpoint). None configured: WebSearch says how.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

TIMEOUT = 20.0
BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
NOT_CONFIGURED = (
    "No web search provider is configured. Set AIMON_WEB_SEARCH=searxng and "
    "AIMON_WEB_SEARCH_URL=http://your-searxng:8080 (a SearXNG instance with JSON output "
    "enabled), or AIMON_WEB_SEARCH=brave and BRAVE_API_KEY=... (Brave Search API), then start "
    "aimon again.")


class SearchError(Exception):
    """The search provider failed; the message says how."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchResult:
    """One hit: its title, URL and the provider's snippet."""

    title: str
    url: str
    snippet: str = ""


class SearchProvider(Protocol):
    """Runs a web search (SearXNG, Brave, ... a test double)."""

    @property
    def name(self) -> str:
        """Return the provider's name, for messages."""
        ...

    async def search(self, query: str, limit: int) -> tuple[SearchResult, ...]:
        """Return up to `limit` results for `query`; raise SearchError."""
        ...


@dataclass(frozen=True, slots=True)
class SearxngSearch:
    """A SearXNG instance's JSON API (`/search?format=json`)."""

    base_url: str
    name: str = "SearXNG"

    async def search(self, query: str, limit: int) -> tuple[SearchResult, ...]:
        """Ask the instance; its `results` become ours."""
        body = await _get_json(self.base_url.rstrip("/") + "/search",
                               {"q": query, "format": "json"}, {})
        return tuple(SearchResult(title=str(r.get("title", "")), url=str(r.get("url", "")),
                                  snippet=str(r.get("content", "")))
                     for r in _items(body.get("results")))[:limit]


@dataclass(frozen=True, slots=True)
class BraveSearch:
    """Brave's Web Search API (an API key from api.search.brave.com)."""

    api_key: str
    base_url: str = BRAVE_URL
    name: str = "Brave Search"

    async def search(self, query: str, limit: int) -> tuple[SearchResult, ...]:
        """Ask the API; `web.results` become ours."""
        body = await _get_json(self.base_url, {"q": query, "count": str(min(limit, 20))},
                               {"X-Subscription-Token": self.api_key,
                                "Accept": "application/json"})
        web = body.get("web")
        results = web.get("results") if isinstance(web, dict) else None
        return tuple(SearchResult(title=str(r.get("title", "")), url=str(r.get("url", "")),
                                  snippet=str(r.get("description", "")))
                     for r in _items(results))[:limit]


def _items(value: object) -> Iterable[Mapping[str, Any]]:
    return [r for r in value if isinstance(r, dict)] if isinstance(value, list) else []


async def _get_json(url: str, params: Mapping[str, str], headers: Mapping[str, str]
                    ) -> Mapping[str, Any]:
    import httpx2

    try:
        async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
            response = await client.get(url, params=dict(params), headers=dict(headers))
    except httpx2.HTTPError as exc:
        raise SearchError(f"the search provider did not answer: {exc}") from None
    if response.status_code != 200:
        raise SearchError(f"the search provider answered HTTP {response.status_code}")
    try:
        body = response.json()
    except ValueError:
        raise SearchError("the search provider's answer is not JSON") from None
    if not isinstance(body, dict):
        raise SearchError("the search provider's answer is not a JSON object")
    return body


def search_provider(env: Mapping[str, str]) -> SearchProvider | None:
    """Return the provider the environment names, or None."""
    kind = env.get("AIMON_WEB_SEARCH", "").strip().lower()
    url = env.get("AIMON_WEB_SEARCH_URL", "").strip()
    if kind == "searxng" and url:
        return SearxngSearch(url)
    if kind == "brave" and env.get("BRAVE_API_KEY"):
        return BraveSearch(env["BRAVE_API_KEY"], url or BRAVE_URL)
    return None


def filter_results(results: Iterable[SearchResult], allowed: Iterable[str],
                   blocked: Iterable[str]) -> tuple[SearchResult, ...]:
    """Keep results on an allowed domain (when any is named) and on no blocked one.

    A domain covers its subdomains: `python.org` keeps `docs.python.org`.
    """
    from aimon_core.tools import url_host

    allow = [d.strip().lower().lstrip(".") for d in allowed if d.strip()]
    block = [d.strip().lower().lstrip(".") for d in blocked if d.strip()]

    def covered(host: str, domains: list[str]) -> bool:
        return any(host == d or host.endswith("." + d) for d in domains)

    kept = []
    for result in results:
        found = url_host(result.url)
        if found is None:
            continue
        if (allow and not covered(found[0], allow)) or covered(found[0], block):
            continue
        kept.append(result)
    return tuple(kept)
