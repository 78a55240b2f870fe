"""The benchmark's echo server, written with trio_mcp.

    python benchmarks/echo_server.py --transport stdio
    python benchmarks/echo_server.py --transport http [--host 127.0.0.1] [--port 8000]

Tools (the same in official_python_server.py and ts/echo_server.mjs):
  echo(text: str) -> str                the text unchanged
  sleep(seconds: float, marker: str)    appends "start <unix time>" to the file ``marker``, sleeps, then
                                        appends "cancelled <t>" (if its handler is cancelled) or "done <t>"

Over HTTP it serves Streamable HTTP on /mcp: sessions (2025-03-26 .. 2025-11-25) and stateless 2026-07-28
requests. It prints "listening <port>" on stdout once the port is bound (``--port 0`` picks a free one).

``--observe middleware`` adds one pass-through middleware; ``--observe shipped`` the stack of
``trio_mcp.middleware`` (access log to a handler that drops it, error shaping, rate and concurrency limits that
never bind, response cache, size limit); ``--observe otel`` instruments the server with ``trio_mcp.otel`` on the
OpenTelemetry SDK, spans batched to an exporter that drops them (benchmarks/observability.py compares them).

``--profile PATH`` runs the server under cProfile and writes the stats (pstats format) to PATH when it ends:
at stdin EOF over stdio, at SIGTERM or SIGINT over HTTP. ``loadgen.py --profile-server PREFIX`` passes it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import trio
from profiling import end_on_signal, run

from trio_mcp import Server

server = Server("bench-echo", version="1.0.0")


def append_marker(path: str, word: str) -> None:
    with open(path, "a", encoding="ascii") as f:
        f.write(f"{word} {time.time():.6f}\n")


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def sleep(seconds: float, marker: str) -> str:
    """Sleep for `seconds`, recording start, cancellation or completion in the file `marker`."""
    append_marker(marker, "start")
    try:
        await trio.sleep(seconds)
    except trio.Cancelled:
        append_marker(marker, "cancelled")
        raise
    append_marker(marker, "done")
    return f"slept {seconds}"


async def serve_http(host: str, port: int, stop_on_sigterm: bool = False) -> None:
    # Imported here, as a stdio server would not import it at all: the stdio cold start leaves it out.
    from trio_mcp.transports.streamable_http import HttpTransportOptions

    # max_sessions above the benchmark's 1,000 sessions plus the sessions of the other phases.
    options = HttpTransportOptions(max_sessions=5000)
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(
            lambda task_status: server.serve_http(host, port, options=options, task_status=task_status)
        )
        print(f"listening {bound}", flush=True)
        if stop_on_sigterm:  # only when profiling: end cleanly so the profile is written
            await end_on_signal(nursery.cancel_scope)


def observe(how: str) -> None:
    """Add what ``--observe`` asks for to the server (before it serves anything)."""
    if how == "middleware":

        @server.middleware
        async def passthrough(call: Any, call_next: Callable[[], Awaitable[Any]]) -> Any:
            return await call_next()

    elif how == "shipped":
        from trio_mcp.middleware import AccessLog, ConcurrencyLimit, ErrorShaping, RateLimit, ResponseCache, SizeLimit

        access = logging.getLogger("trio_mcp.access")
        access.addHandler(logging.NullHandler())  # the record is made (the cost measured), then dropped
        access.setLevel(logging.INFO)
        access.propagate = False
        for middleware in (
            AccessLog(),
            ErrorShaping({PermissionError: -32001}),
            RateLimit(1e9, burst=10**9),
            ConcurrencyLimit(10**6),
            ResponseCache(server),
            SizeLimit(10**7),
        ):
            server.middleware(middleware)

    elif how == "otel":
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

        from trio_mcp.otel import Telemetry

        class DropSpans(SpanExporter):
            def export(self, spans: Any) -> SpanExportResult:
                return SpanExportResult.SUCCESS

        class DropMetrics(MetricExporter):
            def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
                return MetricExportResult.SUCCESS

            def force_flush(self, timeout_millis: float = 10_000) -> bool:
                return True

            def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
                pass

        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(BatchSpanProcessor(DropSpans()))
        meter_provider = MeterProvider(metric_readers=[PeriodicExportingMetricReader(DropMetrics())])
        Telemetry(tracer_provider=tracer_provider, meter_provider=meter_provider).instrument(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--profile", metavar="PATH", help="run under cProfile; write the stats to PATH at exit")
    parser.add_argument("--observe", choices=("none", "middleware", "shipped", "otel"), default="none")
    args = parser.parse_args()
    observe(args.observe)
    try:
        if args.transport == "stdio":
            run(server.serve_stdio, profile=args.profile)
        else:
            run(serve_http, args.host, args.port, args.profile is not None, profile=args.profile)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
