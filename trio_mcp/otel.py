"""OpenTelemetry for trio_mcp: a span and metrics for every request, both ways, with the trace carried in ``_meta``.

Built on middleware: ``Telemetry.instrument(server)`` adds a server middleware, ``Telemetry.client_options()`` the
client's. A sent request gets a CLIENT span and carries its context as ``traceparent``/``tracestate`` in
``params._meta`` (the propagator configured globally, W3C Trace Context by default); the receiving side continues
that trace in a SERVER span around the handler, inside the request's cancel scope. Names follow the (still
developing) OpenTelemetry semantic conventions for MCP: ``mcp.method.name``, ``gen_ai.tool.name``,
``error.type`` (the JSON-RPC code, ``tool_error``, ``cancelled``, ``timeout`` or the exception's class), and the
``mcp.{client,server}.operation.duration`` histograms.

Needs ``opentelemetry-api`` (``pip install 'trio-mcp[otel]'``); the application picks the SDK and exporters.
Nothing here is imported unless the application imports this module, and a server or client it did not
instrument pays nothing.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, TypedDict

import trio

try:
    from opentelemetry import metrics, propagate, trace
    from opentelemetry.propagators.textmap import Getter
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - exercised without the extra installed
    raise ImportError("trio_mcp.otel needs OpenTelemetry: pip install 'trio-mcp[otel]'") from exc

from ._middleware import CallNext, RequestInfo
from ._version import __version__
from .errors import McpError, RequestTimeout

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._middleware import Middleware
    from .server import Server

__all__ = ["Telemetry"]

#: The bucket boundaries (seconds) the semantic conventions advise for operation durations.
_BUCKETS: Final = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: The params field that names what a method is about: (params key, span attribute, part of the span name).
_TARGETS: Final = {
    "tools/call": ("name", "gen_ai.tool.name", True),
    "prompts/get": ("name", "gen_ai.prompt.name", True),
    "resources/read": ("uri", "mcp.resource.uri", False),
    "resources/subscribe": ("uri", "mcp.resource.uri", False),
    "resources/unsubscribe": ("uri", "mcp.resource.uri", False),
    "notifications/resources/updated": ("uri", "mcp.resource.uri", False),
}


class TracingClientOptions(TypedDict):
    """The two ``Client`` options ``Telemetry.client_options()`` sets (and nothing else, so that they combine
    with any other option at a call)."""

    middleware: Sequence[Middleware]
    outbound_middleware: Sequence[Middleware]


class _MetaGetter(Getter[dict[str, Any]]):
    """Reads trace context from ``_meta``; a value that is not a string (a peer's mistake) is ignored."""

    def get(self, carrier: dict[str, Any], key: str) -> list[str] | None:
        value = carrier.get(key)
        return [value] if isinstance(value, str) else None

    def keys(self, carrier: dict[str, Any]) -> list[str]:
        return list(carrier)


_GETTER: Final = _MetaGetter()


class Telemetry:
    """Traces and measures the requests of the servers and clients it is given.

    ``tracer_provider`` and ``meter_provider`` default to the global ones (no-ops until the application
    installs the SDK).
    """

    def __init__(self, *, tracer_provider: Any = None, meter_provider: Any = None) -> None:
        self._tracer = trace.get_tracer("trio_mcp", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("trio_mcp", __version__, meter_provider=meter_provider)
        self._meter = meter
        self._duration = {
            SpanKind.CLIENT: meter.create_histogram(
                "mcp.client.operation.duration",
                unit="s",
                description="Time from sending a request or notification until its answer arrived.",
                explicit_bucket_boundaries_advisory=_BUCKETS,
            ),
            SpanKind.SERVER: meter.create_histogram(
                "mcp.server.operation.duration",
                unit="s",
                description="Time spent serving a request or notification.",
                explicit_bucket_boundaries_advisory=_BUCKETS,
            ),
        }
        #: Requests in flight by method, read when the metrics are collected (cheaper than a counter per call).
        self._active: dict[SpanKind, collections.Counter[str]] = {
            SpanKind.CLIENT: collections.Counter(),
            SpanKind.SERVER: collections.Counter(),
        }
        meter.create_observable_up_down_counter(
            "mcp.client.requests.active",
            callbacks=[self._reader(SpanKind.CLIENT)],
            unit="{request}",
            description="Requests sent and not answered yet.",
        )
        meter.create_observable_up_down_counter(
            "mcp.server.requests.active",
            callbacks=[self._reader(SpanKind.SERVER)],
            unit="{request}",
            description="Requests being served.",
        )

    def _reader(self, kind: SpanKind) -> Callable[[Any], Iterable[metrics.Observation]]:
        def observe(options: Any) -> Iterable[metrics.Observation]:
            return [metrics.Observation(n, {"mcp.method.name": m}) for m, n in self._active[kind].items()]

        return observe

    def instrument(self, server: Server) -> None:
        """Trace and measure everything ``server`` receives (call it before adding other middleware, so that
        the span covers them too) and the requests its handlers send the client, and report its open
        connections as ``mcp.server.connections.active``."""
        server.middleware(self.receiving)
        server.outbound_middleware(self.sending)

        def connections(options: Any) -> Iterable[metrics.Observation]:
            return [metrics.Observation(len(server.connections))]

        self._meter.create_observable_up_down_counter(
            "mcp.server.connections.active",
            callbacks=[connections],
            unit="{connection}",
            description="Client connections being served (sessions, and stateless requests in progress).",
        )

    def client_options(self) -> TracingClientOptions:
        """The ``Client`` options that trace and measure what a client sends and receives: pass them to any
        ``open_*``/``connect_*`` function (``open_http_client(url, **telemetry.client_options())``)."""
        return {"middleware": [self.receiving], "outbound_middleware": [self.sending]}

    async def receiving(self, call: RequestInfo, call_next: CallNext) -> Any:
        """Middleware: a SERVER span around serving ``call``, continuing the sender's trace from ``_meta``."""
        parent = propagate.extract(call.meta, getter=_GETTER)
        return await self._observe(call, call_next, SpanKind.SERVER, parent)

    async def sending(self, call: RequestInfo, call_next: CallNext) -> Any:
        """Outbound middleware: a CLIENT span around a request, its context injected into ``params._meta``."""
        return await self._observe(call, call_next, SpanKind.CLIENT, None)

    async def _observe(self, call: RequestInfo, call_next: CallNext, kind: SpanKind, parent: Any) -> Any:
        method = call.method
        attributes: dict[str, Any] = {"mcp.method.name": method}
        name = method
        target = _TARGETS.get(method)
        value = (call.params or {}).get(target[0]) if target is not None else None
        if target is not None and isinstance(value, str):
            attributes[target[1]] = value
            if target[2]:
                name = f"{method} {value}"
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
        version = call.protocol_version
        if version is not None:
            attributes["mcp.protocol.version"] = version
        measured = {key: attributes[key] for key in attributes if key != "mcp.resource.uri"}  # low cardinality
        active = self._active[kind]
        start = trio.current_time()
        error_type: str | None = None
        with self._tracer.start_as_current_span(
            name,
            context=parent,
            kind=kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            if not call.is_notification:
                active[method] += 1
            try:
                if kind is SpanKind.CLIENT:
                    meta = dict(call.meta)
                    propagate.inject(meta)
                    call.params = {**(call.params or {}), "_meta": meta}
                result = await call_next()
                if type(result) is dict and result.get("isError") is True:
                    error_type = "tool_error"
                    span.set_status(Status(StatusCode.ERROR))
                return result
            except trio.Cancelled:
                error_type = "cancelled"
                span.set_status(Status(StatusCode.ERROR, "cancelled"))
                raise
            except McpError as exc:
                error_type = str(exc.code)
                span.set_attribute("rpc.response.status_code", error_type)
                span.set_status(Status(StatusCode.ERROR, exc.message))
                raise
            except RequestTimeout:
                error_type = "timeout"
                span.set_status(Status(StatusCode.ERROR, "timeout"))
                raise
            except BaseException as exc:
                error_type = type(exc).__qualname__
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, error_type))
                raise
            finally:
                if call.request_id is not None:
                    span.set_attribute("jsonrpc.request.id", str(call.request_id))
                if error_type is not None:
                    span.set_attribute("error.type", error_type)
                    measured["error.type"] = error_type
                self._duration[kind].record(trio.current_time() - start, measured)
                if not call.is_notification:
                    active[method] -= 1
