"""The MCP HTTP application: the guard, then the inbound check, then the room that serves the request.

One endpoint (``/mcp`` by default) serves the modern revision (``stateless.py``) and the legacy era
(``sessions.py``), chosen per request by the inbound check (``trio_mcp._core.inbound``); ``/sse`` and
``/messages`` serve HTTP+SSE of 2024-11-05 (``legacy_sse.py``). Every request passes the guard first
(``guard.py``: Host, Origin, bearer token). This module owns the options and nothing else.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, NoReturn

import attrs
import trio

from ..._core.inbound import HeaderPaths, InboundRules, Rejection, check
from ...errors import INVALID_REQUEST
from .._h11server import serve_http_listeners
from ._common import ConnectFunction, read_body, refuse, request_principal, send_error
from .cors import Cors, CorsResponse
from .exchange import Request, Response, ResponseWithHeaders
from .guard import LOCAL_NAMES, Guard, ScopesFor, decoded_message
from .legacy_sse import serve_sse_post, serve_sse_stream
from .options import HttpTransportOptions
from .roaming import SessionTasks
from .sessions import SessionEndpoint
from .stateless import serve_stateless

__all__ = ["Mount", "StreamableHttpApp", "serve_mounts", "serve_streamable_http"]

#: Seconds the release of an app's resources may take when it stops.
_CLOSE_TIMEOUT = 5.0


class StreamableHttpApp:
    """The HTTP handler for MCP: give it to ``serve_http`` (``serve_streamable_http`` does both)."""

    def __init__(
        self,
        connect: ConnectFunction,
        nursery: trio.Nursery,
        *,
        options: HttpTransportOptions = HttpTransportOptions(),
        header_paths: HeaderPaths | None = None,
        scopes_for: ScopesFor | None = None,
        bound_host: str = "127.0.0.1",
        tasks: SessionTasks | None = None,
    ) -> None:
        self.options = options
        self._connect = connect
        self._scopes_for = scopes_for
        self._rules = InboundRules(stateless=options.stateless, sessions=options.sessions, header_paths=header_paths)
        # An origin allowed to call from a browser is an allowed Origin too.
        origins = (
            *(LOCAL_NAMES if options.allowed_origins is None else options.allowed_origins),
            *options.cors_origins,
        )
        self._guard = Guard.for_server(
            bound_host, allowed_hosts=options.allowed_hosts, allowed_origins=origins, authenticate=options.authenticate
        )
        self._cors = Cors(options.cors_origins)
        self._probes = frozenset(path for path in (options.liveness_path, options.readiness_path) if path)
        self._nursery = nursery
        self.sessions = SessionEndpoint(connect, nursery, options, tasks)
        self._legacy = options.sessions and options.sse_path is not None
        taken = {options.path, options.sse_path, options.messages_path, options.liveness_path, options.readiness_path}
        clash = sorted(path for path in taken & set(options.routes) if path)
        if clash:
            raise ValueError(
                f"routes: {clash} are served by the server itself (MCP endpoints or probes; a probe "
                "path can be set to None)"
            )

    def handles(self, path: str) -> bool:
        """Whether ``path`` is one of this app's endpoints (for serving several apps on one listener)."""
        options = self.options
        if path == options.path:  # the usual case, first
            return True
        if options.auth is not None and path in options.auth.metadata_paths(options.path):
            return True
        return (
            (self._legacy and path in (options.sse_path, options.messages_path))
            or path in options.routes
            or path in (options.liveness_path, options.readiness_path)
        )

    async def aclose(self) -> None:
        """Release what the app holds beyond its nursery (the auth guard's connections to the authorization
        server); called when it stops serving, also on cancellation, so each step is bounded."""
        if self.options.auth is not None:
            with trio.move_on_after(_CLOSE_TIMEOUT, shield=True):
                await self.options.auth.aclose()

    async def maintain(self) -> NoReturn:
        """Reap idle sessions and hear the other processes sharing a session directory (for the life of the app)."""
        await self.sessions.maintain()

    async def __call__(self, request: Request, response: Response) -> None:
        headers = request.headers
        options = self.options
        path = request.path
        refused = self._guard.check_parsed_host(request.host, headers.get("host"))
        if refused is None and self._cors.origins:
            if Cors.is_preflight(request):
                await self._cors.preflight(request, response)
                return
            origin = self._cors.allowed(headers)
            if origin is not None:
                response = CorsResponse(response, origin)
        # The auth guard's own paths (metadata, a hosted authorization server's endpoints) are for any origin:
        # browsers post its consent form from the server's own public origin, and apps call its token endpoint.
        own = options.auth is not None and path in options.auth.metadata_paths(options.path) and path != options.path
        refused = refused or (None if own else self._guard.check_origin(headers.get_all("origin")))
        if refused is None and path in self._probes:
            await _probe(request, response, ready=path == options.readiness_path)
            return
        if refused is None and path in options.routes:
            await options.routes[path](request, response)
            return
        principal: Any = None
        if refused is None and self.options.auth is not None:
            principal = await self.options.auth(request, response, self.options.path, self._scopes_for)
            if principal is None:
                return  # the guard answered: a challenge, or its own metadata
            extra = self.options.auth.response_headers(request)
            if extra:
                response = ResponseWithHeaders(response, extra)
        elif refused is None and self._guard.authenticate is not None:
            principal, refused = await self._guard.principal(headers.get("authorization"))
        if refused is not None:
            await send_error(response, refused.status, None, INVALID_REQUEST, refused.reason, headers=refused.headers)
            return
        request_principal.set(principal)
        if request.path == options.path:
            await self._endpoint(request, response)
        elif self._legacy and request.path == options.sse_path:
            if request.method != "GET":
                await response.send(405, (("allow", "GET"),))
            else:
                await serve_sse_stream(self.sessions, request, response)
        elif self._legacy and request.path == options.messages_path:
            if request.method != "POST":
                await response.send(405, (("allow", "POST"),))
            else:
                await serve_sse_post(self.sessions, request, response)
        else:
            await response.send(404, (("content-type", "text/plain"),), b"not found\n")

    async def _endpoint(self, request: Request, response: Response) -> None:
        body = b""
        if request.method == "POST":
            read = await read_body(request, response)
            if read is None:
                return
            body = read
        route = check(request.method, request.headers, body, self._rules, decoded_message(request))
        if isinstance(route, Rejection):
            await refuse(response, route)
        elif route.era == "modern":
            await serve_stateless(
                self._connect,
                request,
                response,
                route,
                nursery=self._nursery,
                keepalive=self.options.keepalive_interval,
            )
        elif route.method == "POST":
            await self.sessions.post(request, response, route)
        elif route.method == "GET":
            await self.sessions.get(request, response, route)
        else:
            await self.sessions.delete(request, response, route)


async def serve_streamable_http(
    connect: ConnectFunction,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    options: HttpTransportOptions = HttpTransportOptions(),
    header_paths: HeaderPaths | None = None,
    scopes_for: ScopesFor | None = None,
    ssl_context: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Serve MCP over HTTP (HTTPS with ``ssl_context``) on ``host:port`` until cancelled.

    ``task_status.started()`` gets the bound port. Every session and every request runs in nurseries this
    function owns: cancelling it cancels them all at once and returns promptly. For a graceful stop, give
    ``options.drain`` a ``Drain`` and await it first. A port that cannot be bound raises the ``OSError``.
    """
    await serve_mounts(
        {"": Mount(connect, header_paths, options, scopes_for)},
        host,
        port,
        ssl_context=ssl_context,
        task_status=task_status,
    )


async def _probe(request: Request, response: Response, *, ready: bool) -> None:
    """A liveness probe (always 200 while serving) or a readiness probe (503 once a graceful stop began)."""
    if request.method not in ("GET", "HEAD"):
        await response.send(405, (("allow", "GET, HEAD"),))
    elif ready and request.server_stopping.is_set():
        await response.send(503, (("content-type", "text/plain"), ("cache-control", "no-store")), b"draining\n")
    else:
        await response.send(200, (("content-type", "text/plain"), ("cache-control", "no-store")), b"ok\n")


class Mount(NamedTuple):
    """One MCP server on a listener (``Server.http_mount()`` makes one)."""

    #: How to serve a connection (``Server.serve_connection``).
    connect: ConnectFunction
    #: The ``x-mcp-header`` paths of its tools (``Server.tool_header_paths``).
    header_paths: HeaderPaths | None = None
    options: HttpTransportOptions = HttpTransportOptions()
    #: The scopes a request needs (``Server.required_scopes``), for ``options.auth`` to answer 403 with.
    scopes_for: ScopesFor | None = None
    #: Its tasks, which end with their session on every process (``Server.tasks``).
    tasks: SessionTasks | None = None


async def serve_mounts(
    mounts: Mapping[str, Mount],
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    ssl_context: ssl.SSLContext | None = None,
    listeners: Sequence[trio.SocketListener] | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Serve several MCP servers on one listener, each under its own path prefix (``""`` for the root).

    The endpoints of a server mounted at ``/weather`` are ``/weather/mcp``, ``/weather/sse`` and
    ``/weather/messages`` (with the default options). The HTTP limits and the drain of the first mount apply
    to the listener. ``listeners`` serves sockets bound elsewhere (a worker process's inherited socket)
    instead of binding ``host:port``; ``host`` still decides the default ``Host``/``Origin`` allow-lists.
    """
    mounts = {prefix: Mount(*mount) for prefix, mount in mounts.items()}  # plain tuples too
    first_options = next(iter(mounts.values())).options
    # Bound before any nursery opens, so that a port in use raises the OSError itself.
    bound_listeners: list[Any] = (
        list(listeners) if listeners is not None else await trio.open_tcp_listeners(port, host=host)
    )
    if ssl_context is not None:
        bound_listeners = [trio.SSLListener(item, ssl_context, https_compatible=True) for item in bound_listeners]
    apps: list[StreamableHttpApp] = []
    try:
        await _serve_apps(mounts, apps, bound_listeners, host, first_options, task_status)
    finally:
        for app in apps:
            await app.aclose()
    raise AssertionError("unreachable")


async def _serve_apps(
    mounts: Mapping[str, Mount],
    apps: list[StreamableHttpApp],
    bound_listeners: list[Any],
    host: str,
    first_options: HttpTransportOptions,
    task_status: trio.TaskStatus[int],
) -> None:
    async with trio.open_nursery() as nursery:
        for prefix, (connect, header_paths, options, scopes_for, tasks) in mounts.items():
            prefix = prefix.rstrip("/")
            mounted = attrs.evolve(
                options,
                path=prefix + options.path,
                sse_path=None if options.sse_path is None else prefix + options.sse_path,
                messages_path=prefix + options.messages_path,
                routes={prefix + path: handler for path, handler in options.routes.items()},
                liveness_path=None if options.liveness_path is None else prefix + options.liveness_path,
                readiness_path=None if options.readiness_path is None else prefix + options.readiness_path,
            )
            app = StreamableHttpApp(
                connect,
                nursery,
                options=mounted,
                header_paths=header_paths,
                scopes_for=scopes_for,
                bound_host=host,
                tasks=tasks,
            )
            nursery.start_soon(app.maintain)
            apps.append(app)

        async def route(request: Request, response: Response) -> None:
            for app in apps:
                if app.handles(request.path):
                    await app(request, response)
                    return
            await response.send(404, (("content-type", "text/plain"),), b"not found\n")

        bound = await nursery.start(
            functools.partial(
                serve_http_listeners, route, bound_listeners, limits=first_options.limits, drain=first_options.drain
            )
        )
        first = bound[0]
        socket_listener = first.transport_listener if isinstance(first, trio.SSLListener) else first
        assert isinstance(socket_listener, trio.SocketListener)
        task_status.started(int(socket_listener.socket.getsockname()[1]))
        await trio.sleep_forever()
    raise AssertionError("unreachable")
