"""OpenTelemetry over real transports, with the SDK's in-memory exporter and reader: a client's span is the parent
of the server's (trace context in ``_meta``), the handler's own spans are children of that, failures and
cancellations are recorded as such, and the metrics count requests by method and outcome."""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio

pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK is a test dependency: pip install -e .[test]")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402
from transport_helpers import connect  # noqa: E402
from waiting import wait_until  # noqa: E402

import trio_mcp  # noqa: E402
from trio_mcp import Context, McpError, ToolError  # noqa: E402
from trio_mcp.otel import Telemetry  # noqa: E402


class Collector:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        self.telemetry = Telemetry(tracer_provider=self.tracer_provider, meter_provider=self.meter_provider)

    def finished(self, name: str, kind: SpanKind) -> ReadableSpan:
        found = [span for span in self.spans.get_finished_spans() if span.name == name and span.kind is kind]
        assert len(found) == 1, [(span.name, span.kind) for span in self.spans.get_finished_spans()]
        return found[0]

    def points(self, metric: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for item in scope.metrics
            if item.name == metric
            for point in item.data.data_points
        ]


def build_server(collector: Collector, started: trio.Event) -> trio_mcp.Server:
    server = trio_mcp.Server("traced")
    collector.telemetry.instrument(server)
    tracer = collector.tracer_provider.get_tracer("handler")

    @server.tool()
    async def lookup(city: str) -> str:
        with tracer.start_as_current_span("database query"):
            return f"Sunny in {city}"

    @server.tool()
    async def refuse() -> str:
        raise ToolError("no")

    @server.tool()
    async def forever(ctx: Context) -> str:
        started.set()
        await trio.sleep(math.inf)
        return "never"

    return server


@pytest.mark.parametrize("transport", ["http-session", "http-stateless", "websocket"])
async def test_a_client_trace_continues_into_the_server_handler(transport: str) -> None:
    collector = Collector()
    started = trio.Event()
    server = build_server(collector, started)
    with trio.fail_after(20):
        async with connect(server, transport, **collector.telemetry.client_options()) as client:
            result = await client.call_tool("lookup", {"city": "Oslo"})
            assert result.content[0].text == "Sunny in Oslo"  # type: ignore[union-attr]

            assert (await client.call_tool("refuse", {})).is_error
            with pytest.raises(McpError):
                await client.request("tools/call", {"name": "no such tool", "arguments": {}})

            with trio.move_on_after(5) as scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(client.call_tool, "forever", {})
                    await started.wait()
                    nursery.cancel_scope.cancel()
            assert not scope.cancelled_caught
            # The server span of the cancelled call ends once the cancellation reached the handler.
            await wait_until(
                lambda: len([s for s in collector.spans.get_finished_spans() if s.name == "tools/call forever"]) >= 2
            )

    sent = collector.finished("tools/call lookup", SpanKind.CLIENT)
    served = collector.finished("tools/call lookup", SpanKind.SERVER)
    query = collector.finished("database query", SpanKind.INTERNAL)
    assert served.context.trace_id == sent.context.trace_id == query.context.trace_id
    assert served.parent is not None and served.parent.span_id == sent.context.span_id
    assert query.parent is not None and query.parent.span_id == served.context.span_id
    for span in (sent, served):
        assert span.attributes is not None
        assert span.attributes["mcp.method.name"] == "tools/call"
        assert span.attributes["gen_ai.tool.name"] == "lookup"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert "jsonrpc.request.id" in span.attributes and "error.type" not in span.attributes
        assert span.status.status_code is StatusCode.UNSET
    version = "2025-11-25" if transport == "http-session" else "2026-07-28"
    assert served.attributes is not None and served.attributes["mcp.protocol.version"] == version

    for kind in (SpanKind.CLIENT, SpanKind.SERVER):
        refused = collector.finished("tools/call refuse", kind)
        assert refused.attributes is not None and refused.attributes["error.type"] == "tool_error"
        unknown = collector.finished("tools/call no such tool", kind)
        assert unknown.attributes is not None and unknown.attributes["error.type"] == "-32602"
        assert unknown.status.status_code is StatusCode.ERROR
        cancelled = collector.finished("tools/call forever", kind)
        assert cancelled.attributes is not None and cancelled.attributes["error.type"] == "cancelled"

    outcomes = {
        (point.attributes.get("gen_ai.tool.name"), point.attributes.get("error.type")): point.count
        for point in collector.points("mcp.server.operation.duration")
        if point.attributes["mcp.method.name"] == "tools/call"
    }
    assert outcomes == {
        ("lookup", None): 1,
        ("refuse", "tool_error"): 1,
        ("no such tool", "-32602"): 1,
        ("forever", "cancelled"): 1,
    }
    client_calls = [
        p for p in collector.points("mcp.client.operation.duration") if p.attributes["mcp.method.name"] == "tools/call"
    ]
    assert sum(point.count for point in client_calls) == 4
    for side in ("server", "client"):
        active = {p.attributes["mcp.method.name"]: p.value for p in collector.points(f"mcp.{side}.requests.active")}
        assert active["tools/call"] == 0, (side, active)  # every call counted in, and out again


async def test_a_server_request_to_the_client_is_traced_on_both_sides() -> None:
    """Sampling goes the other way: the client serves it, continuing the server handler's trace."""
    collector = Collector()
    server = trio_mcp.Server("asks")
    collector.telemetry.instrument(server)

    @server.tool()
    async def roots(ctx: Context) -> str:
        return ",".join(str(root.uri) for root in await ctx.list_roots())

    async def list_roots() -> list[Any]:
        from trio_mcp.types import Root

        return [Root(uri="file:///tmp")]

    with trio.fail_after(20):
        async with connect(server, "http-session", roots=list_roots, **collector.telemetry.client_options()) as client:
            assert (await client.call_tool("roots", {})).content[0].text == "file:///tmp"  # type: ignore[union-attr]
    served_by_server = collector.finished("tools/call roots", SpanKind.SERVER)
    asked = collector.finished("roots/list", SpanKind.CLIENT)
    served_by_client = collector.finished("roots/list", SpanKind.SERVER)
    assert asked.parent is not None and asked.parent.span_id == served_by_server.context.span_id
    assert served_by_client.parent is not None and served_by_client.parent.span_id == asked.context.span_id


async def test_garbage_trace_context_is_ignored() -> None:
    collector = Collector()
    server = build_server(collector, trio.Event())
    with trio.fail_after(20):
        async with connect(server, "http-session") as client:
            meta = {"traceparent": 42, "tracestate": ["x"]}
            result = await client.request(
                "tools/call", {"name": "lookup", "arguments": {"city": "Rome"}, "_meta": meta}
            )
            assert result["content"][0]["text"] == "Sunny in Rome"
    served = collector.finished("tools/call lookup", SpanKind.SERVER)
    assert served.parent is None


def test_the_global_providers_are_the_default() -> None:
    telemetry = Telemetry()  # no-op until an SDK is installed globally
    assert isinstance(trace.get_tracer_provider(), trace.TracerProvider)
    assert telemetry.client_options().keys() == {"middleware", "outbound_middleware"}


def test_nothing_loads_opentelemetry_unless_asked() -> None:
    import subprocess
    import sys

    code = (
        "import sys, trio_mcp, trio_mcp.client, trio_mcp.server, trio_mcp.testing\n"
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')], 'opentelemetry was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
