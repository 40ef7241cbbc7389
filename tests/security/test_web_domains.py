"""Class: the host a WebFetch rule is decided on is the host the fetch reaches.

Table 1: URL spellings against domain rules (case, final dot, ports, subdomains, look-alike
hosts, user info, fragments, schemes). Table 2: every spelling either is refused before a
connection or reaches exactly the host the rules saw (httpx parses URLs itself; where the
standard library's parse and httpx's could differ, aimon refuses the URL).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.permission import PermissionRules, Verdict, decide, parse_rule
from aimon_core.tools import url_host
from aimon_core.web import FetchError, PageCache, checked_url, web_tools

WEBFETCH = next(t for t in web_tools(PageCache(), None).provided if t.name == "WebFetch")
ALLOW_EXAMPLE = {"allow": ("WebFetch(domain:example.com)",)}
ALLOW_SUBS = {"allow": ("WebFetch(domain:*.example.com)",)}
DENY_EVIL = {"allow": ("WebFetch",), "deny": ("WebFetch(domain:evil.org)",)}
ASK_EVIL = {"allow": ("WebFetch",), "ask": ("WebFetch(domain:evil.org)",)}

CASES = [
    ("https://example.com/x", ALLOW_EXAMPLE, Verdict.ALLOW),
    ("https://EXAMPLE.com./x", ALLOW_EXAMPLE, Verdict.ALLOW),
    ("HTTPS://Example.COM:8443/x", ALLOW_EXAMPLE, Verdict.ALLOW),
    ("https://sub.example.com/", ALLOW_EXAMPLE, Verdict.ASK),
    ("https://example.com.evil.org/", ALLOW_EXAMPLE, Verdict.ASK),
    ("https://evilexample.com/", ALLOW_EXAMPLE, Verdict.ASK),
    ("https://example.com@evil.org/", ALLOW_EXAMPLE, Verdict.ASK),
    ("https://evil.org/?next=https://example.com/", ALLOW_EXAMPLE, Verdict.ASK),
    ("https://evil.org#@example.com", ALLOW_EXAMPLE, Verdict.ASK),
    ("https://evil.org/example.com", ALLOW_EXAMPLE, Verdict.ASK),
    ("https://exam%70le.com/", ALLOW_EXAMPLE, Verdict.ASK),
    ("file:///etc/passwd", ALLOW_EXAMPLE, Verdict.DENY),
    ("javascript:alert(1)", ALLOW_EXAMPLE, Verdict.DENY),
    ("ftp://example.com/", ALLOW_EXAMPLE, Verdict.DENY),
    ("example.com", ALLOW_EXAMPLE, Verdict.DENY),
    ("", ALLOW_EXAMPLE, Verdict.DENY),
    ("https://sub.example.com/", ALLOW_SUBS, Verdict.ALLOW),
    ("https://a.b.example.com/", ALLOW_SUBS, Verdict.ALLOW),
    ("https://example.com/", ALLOW_SUBS, Verdict.ASK),
    ("https://notexample.com/", ALLOW_SUBS, Verdict.ASK),
    ("https://EVIL.org./", DENY_EVIL, Verdict.DENY),
    ("https://evil.org:8080/", DENY_EVIL, Verdict.DENY),
    ("https://example.com/", DENY_EVIL, Verdict.ALLOW),
    ("https://evil.org/", ASK_EVIL, Verdict.ASK),
    ("https://example.com/", {}, Verdict.ASK),
    ("http://127.0.0.1:8080/", {}, Verdict.ASK),
]


def rules(spec: dict[str, tuple[str, ...]]) -> PermissionRules:
    return PermissionRules(**{k: tuple(parse_rule(r) for r in v) for k, v in spec.items()})


@pytest.mark.parametrize(("url", "spec", "verdict"), CASES,
                         ids=[f"{i}-{c[0][:40]}" for i, c in enumerate(CASES)])
def test_domain_rules_decide_on_the_host(url: str, spec: dict[str, tuple[str, ...]],
                                         verdict: Verdict) -> None:
    decision = decide(WEBFETCH, {"url": url, "prompt": "p"}, rules(spec), Path("/"))
    assert decision.verdict is verdict, decision.reason


SPELLINGS = [c[0] for c in CASES] + [
    "http://evil.org\\@example.com/", "http://example.com\\.evil.org/",
    "https://user@example.com/", "https://:pw@example.com/", "http://example.com%2f.evil.org/",
    "http://[::1]:8080/", "http://0x7f.1/", "http://exa\tmple.com/", "http://example.com /x",
    "https://xn--exmple-cua.com/", "https://exämple.com/",
]


@pytest.mark.parametrize("url", SPELLINGS, ids=[f"{i}" for i in range(len(SPELLINGS))])
def test_a_fetch_reaches_the_host_the_rules_saw_or_none(url: str) -> None:
    import httpx2

    try:
        checked = checked_url(url)
    except FetchError:
        return  # refused before any connection
    seen = url_host(url)
    assert seen is not None
    assert httpx2.URL(checked).host.lower().rstrip(".") == seen[0]
    assert not httpx2.URL(checked).userinfo
