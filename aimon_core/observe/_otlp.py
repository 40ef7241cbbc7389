"""OpenTelemetry export: spans sent over OTLP/HTTP when the standard `OTEL_*` variables ask.

Nothing here loads OpenTelemetry until an exporter is made, and one is made only when
`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (and neither
`OTEL_SDK_DISABLED=true` nor `OTEL_TRACES_EXPORTER=none` says no): otherwise nothing leaves the
machine. The SDK's exporter reads the rest of the variables itself (headers, timeout,
compression); `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` name the resource.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping, Sequence
from typing import Any

from aimon_core.observe._spans import SpanRecord


def otlp_problem(environ: Mapping[str, str]) -> str | None:
    """Say why the asked-for export cannot be made (a protocol aimon does not speak), or None."""
    protocol = (environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf").strip()
    if protocol != "http/protobuf":
        return (f"traces are not exported: OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r}, and aimon "
                "sends OTLP over HTTP only (http/protobuf; port 4318 on most collectors)")
    return None


def otlp_wanted(environ: Mapping[str, str]) -> bool:
    """Tell whether the environment asks for spans to be exported over OTLP."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if exporters in ("none", ""):
        return False
    return bool(environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
                or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())


class OTLPSpanExport:
    """Sends each execution's spans over OTLP/HTTP, in a thread of its own, in order."""

    def __init__(self) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource

        from aimon_core import __version__

        self._exporter = OTLPSpanExporter()
        self._resource = Resource.create({"service.name": "aimon",
                                          "service.version": __version__})
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aimon otlp")

    def export(self, spans: Sequence[SpanRecord]) -> None:
        """Queue `spans` to be sent; a failure is the SDK's to log, never the turn's."""
        readable = [self._readable(span) for span in spans]
        self._pool.submit(self._exporter.export, readable)

    async def aclose(self) -> None:
        """Send what is queued, then stop."""
        await asyncio.to_thread(self._pool.shutdown, wait=True)
        self._exporter.shutdown()  # type: ignore[no-untyped-call]

    def _readable(self, span: SpanRecord) -> Any:
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        def context(span_id: str) -> SpanContext:
            return SpanContext(trace_id=int(span.trace_id, 16), span_id=int(span_id, 16),
                               is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))

        kind = SpanKind.CLIENT if span.name.startswith("chat ") else SpanKind.INTERNAL
        status = (Status(StatusCode.ERROR, span.error) if span.error
                  else Status(StatusCode.UNSET))
        return ReadableSpan(
            name=span.name, context=context(span.span_id),
            parent=context(span.parent_id) if span.parent_id else None,
            resource=self._resource, attributes=dict(span.attributes), kind=kind,
            status=status, start_time=int(span.start * 1e9), end_time=int(span.end * 1e9),
            instrumentation_scope=InstrumentationScope("aimon"))
