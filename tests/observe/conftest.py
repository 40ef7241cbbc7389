"""A loopback OTLP/HTTP receiver: what aimon exports, decoded, without leaving the machine."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from aimon_core.llm import LLMClient


@dataclass
class Received:
    """The spans the receiver got, decoded from OTLP protobuf, and the paths posted to."""

    spans: list[Any] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def attributes(items: Any) -> dict[str, Any]:
    """Return OTLP key-value attributes as a dict."""
    return {item.key: _value(item.value) for item in items}


@pytest.fixture
def otlp_receiver() -> Iterator[tuple[str, Received]]:
    """Serve OTLP/HTTP on 127.0.0.1; yield its endpoint and what it receives."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = ExportTraceServiceRequest.FromString(body)
            received.paths.append(self.path)
            for resource_spans in request.resource_spans:
                received.resources.append(attributes(resource_spans.resource.attributes))
                for scope in resource_spans.scope_spans:
                    received.spans.extend(scope.spans)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            received.arrived.set()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def interrupt_after_text(root: Path, client: LLMClient) -> tuple[str, float]:
    """Run a turn on `client` until its text streams, interrupt it; return the session's id
    and total cost."""
    from aimon_core.agent import AssistantTextDelta
    from aimon_core.runtime import RuntimeParts, build_runtime
    from aimon_core.session import (
        MemorySessionLeaseStore,
        MemorySessionRecordStore,
        SessionStore,
    )

    async def main() -> tuple[str, float]:
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        parts = RuntimeParts(client=client, model="claude-sonnet-4-5", trust_all=True)
        async with build_runtime(root, parts=parts) as built, \
                await built.open_session(store) as live:
            streamed = asyncio.Event()
            live.subscribe(lambda e: streamed.set() if isinstance(e, AssistantTextDelta) else None)
            task = live.submit_async("explain")
            await asyncio.wait_for(streamed.wait(), 5)
            assert live.interrupt()
            with pytest.raises(asyncio.CancelledError):
                await task
            return live.id, live.record.totals.cost_usd

    return asyncio.run(main())
