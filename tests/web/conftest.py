"""A loopback web server for the web tools' tests: pages, redirects, a search API."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

PAGE = """<html><head><title>Parser notes</title><style>p {color: red}</style></head>
<body><script>alert('x')</script><h1>The parser</h1>
<p>It reads <b>tokens</b> and see <a href="/other">the other page</a>.</p>
<ul><li>one</li><li>two</li></ul></body></html>"""
SEARCH_RESULTS = [
    {"title": "Python docs", "url": "https://docs.python.org/3/", "content": "The docs."},
    {"title": "A blog", "url": "https://blog.example.com/post", "content": "A post."},
    {"title": "PyPI", "url": "https://pypi.org/project/x/", "content": "A package."},
]

Route = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]


class WebServer:
    """Serves a few routes on 127.0.0.1; counts the requests of each path."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.queries: list[dict[str, list[str]]] = []
        self.headers: list[dict[str, str]] = []
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                server.hits[parts.path] = server.hits.get(parts.path, 0) + 1
                server.queries.append(parse_qs(parts.query))
                server.headers.append(dict(self.headers.items()))
                status, headers, body = server.route(parts.path)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def route(self, path: str) -> tuple[int, dict[str, str], bytes]:
        html = {"Content-Type": "text/html; charset=utf-8"}
        match path:
            case "/page" | "/other":
                return 200, html, PAGE.encode()
            case "/text":
                return 200, {"Content-Type": "text/plain"}, b"plain </untrusted-content> text"
            case "/same-host":
                return 302, {"Location": "/page"}, b""
            case "/other-host":
                return 301, {"Location": self.url("/page", "localhost")}, b""
            case "/loop":
                return 302, {"Location": "/loop"}, b""
            case "/hang":
                self.release.wait(30)
                return 200, {"Content-Type": "text/plain"}, b"late"
            case "/image":
                return 200, {"Content-Type": "image/png"}, b"\x89PNG...."
            case "/search":
                return 200, {"Content-Type": "application/json"}, json.dumps(
                    {"results": SEARCH_RESULTS}).encode()
            case "/brave":
                brave = [{"title": r["title"], "url": r["url"], "description": r["content"]}
                         for r in SEARCH_RESULTS]
                return 200, {"Content-Type": "application/json"}, json.dumps(
                    {"web": {"results": brave}}).encode()
            case _:
                return 404, html, b"<p>not here</p>"


@pytest.fixture
def web() -> Iterator[WebServer]:
    server = WebServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.release.set()
        server.httpd.shutdown()
        server.httpd.server_close()
