"""The web: WebFetch and WebSearch, a page cache outside the tools, search providers."""

from aimon_core.web._fetch import (
    CACHE_SECONDS,
    MAX_BYTES,
    MAX_MARKDOWN,
    FetchError,
    Page,
    PageCache,
    Redirected,
    checked_url,
    fetch,
    to_markdown,
)
from aimon_core.web._search import (
    NOT_CONFIGURED,
    BraveSearch,
    SearchError,
    SearchProvider,
    SearchResult,
    SearxngSearch,
    filter_results,
    search_provider,
)
from aimon_core.web._tools import WEB_TOOL_NAMES, default_web_tools, untrusted, web_tools

__all__ = [
    "CACHE_SECONDS",
    "MAX_BYTES",
    "MAX_MARKDOWN",
    "NOT_CONFIGURED",
    "WEB_TOOL_NAMES",
    "BraveSearch",
    "FetchError",
    "Page",
    "PageCache",
    "Redirected",
    "SearchError",
    "SearchProvider",
    "SearchResult",
    "SearxngSearch",
    "checked_url",
    "default_web_tools",
    "fetch",
    "filter_results",
    "search_provider",
    "to_markdown",
    "untrusted",
    "web_tools",
]
