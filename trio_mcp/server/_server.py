"""``Server``: the registry (``ServerCore``) with the ways to serve it, and the composition of servers."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import attrs
import trio

from .._console_log import serving_console
from .._runner import InCaller, Spawn
from .._task_set import TaskSet
from .._util import collapse_exception_groups
from ..transports._base import MessageStream, StreamControl
from ..transports.stdio import stdio_server_stream
from ._connection import ServerConnection
from ._mount import Mount
from ._registry import ServerCore
from ._task_rerun import rerun_task
from ._transform import Transform

if TYPE_CHECKING:
    import ssl

    from .._core.tasks import TaskRecord
    from ..auth import ResourceServerAuth
    from ..transports.streamable_http import HttpTransportOptions
    from ..transports.streamable_http import Mount as HttpMount
    from ._tasks import Work
    from ._tools import ToolDefinition

# The HTTP and WebSocket transports are imported when first served: a stdio server starts faster without them.

__all__ = ["Server", "serve_http_many"]


_startup_frozen = False


def _freeze_startup_objects() -> None:
    """Once a process starts serving, what it made before (modules, classes, the registry, the lifespan's state)
    lives as long as it does: ``gc.freeze()`` takes it out of every later full collection, which would
    otherwise walk it each time (at 64 busy HTTP clients, pauses of about 25 ms, each). ``gc.unfreeze()``
    undoes it. A serving process's first call does it; later ones find the objects already frozen. (Not judged
    by ``gc.get_freeze_count()``: CPython 3.12.1 starts with objects of its own frozen.)"""
    global _startup_frozen
    if not _startup_frozen:
        _startup_frozen = True
        gc.freeze()


class Server(ServerCore):
    """An MCP server: register tools, resources and prompts with decorators, then serve it.

    The registry is long-lived and shared; each connection gets its own ``ServerConnection`` with its
    own handshake state, log level and subscriptions, so one ``Server`` serves many clients at once.
    Changing the registry while clients are connected sends them ``list_changed`` notifications.
    """

    def rerun_task(self, record: TaskRecord) -> Callable[[], tuple[Any, ToolDefinition, Work]] | None:
        return rerun_task(self, record)

    def mount(
        self,
        prefix: str,
        other: Server,
        *,
        separator: str = "_",
        prefix_uris: bool = False,
        transform: Transform | None = None,
    ) -> None:
        """Serve ``other``'s tools and prompts as ``<prefix><separator><name>``, and its resources, as this
        server's own; they stay in step with ``other``, and its lifespan runs inside this one's (docs/composition.md).

        Resources keep their URIs unless ``prefix_uris``: then ``scheme://rest`` is served as
        ``scheme://<prefix>/rest``, so two mounted servers may use the same URIs.
        ``transform`` renames, hides, re-describes or filters ``other``'s tools as this server shows them, and
        changes their arguments (``trio_mcp.server.Transform``).
        Raises ``ValueError`` for a bad prefix or separator, a name this server already has, or a cycle.
        """
        mount = Mount(self, prefix, other, separator, prefix_uris=prefix_uris, transform=transform)
        mount.attach()
        self.mounts.append(mount)
        other.watch(mount)

    # -- serving ----------------------------------------------------------------------------------

    async def serve_connection(
        self,
        stream: MessageStream,
        *,
        modern_only: bool = False,
        principal: Any = None,
        control: StreamControl | None = None,
        runner: Spawn | InCaller | None = None,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve one client over ``stream`` until it disconnects (for custom transports and tests).

        ``modern_only`` treats every request as 2026-07-28 (stateless HTTP requests); ``principal`` is who the
        transport authenticated (``Context.principal``); ``control`` is what a transport with per-request
        streams offers the connection. ``runner`` says where each request runs (``trio_mcp.transports``):

        - None: the connection reads ``stream`` in a task of its own and runs each request in a task of its
          nursery (over a stream with ``send_later``, such as stdio's, in the reading task until it first waits);
        - ``Spawn(tasks)``, with a ``control``: the connection holds no task of its own; this returns once it
          is set up, the transport hands it every client message (``control.on_inbound``), each request runs in
          a task of ``tasks`` (a ``TaskSet``), and ``tasks.cancel()`` ends it;
        - ``InCaller(tasks)``: the one message ``stream.receive()`` returns (a stateless request) is served in
          this task, whose cancellation is the request's, what it starts runs in ``tasks`` if given, and the
          connection then ends.

        Raises ``TypeError`` for any other ``runner``. This does not run the lifespan; wrap it in ``running()``
        when the server has one.
        """
        kind = type(runner)
        if runner is not None and kind is not Spawn and kind is not InCaller:
            raise TypeError(f"runner must be None, Spawn(tasks) or InCaller(tasks), not {runner!r}")
        if isinstance(runner, Spawn) and (control is None or type(runner.tasks) is not TaskSet):
            raise TypeError("runner=Spawn(tasks) needs a TaskSet for tasks and a control= to hand messages over")
        connection = ServerConnection(self, stream, modern_only=modern_only, principal=principal, control=control)
        if kind is Spawn:
            await connection.serve(runner, task_status=task_status)
            return
        with collapse_exception_groups():
            await connection.serve(runner, task_status=task_status)

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        options: HttpTransportOptions | None = None,
        ssl_context: ssl.SSLContext | None = None,
        auth: ResourceServerAuth | None = None,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
    ) -> NoReturn:
        """Serve MCP over HTTP until cancelled: Streamable HTTP on ``/mcp`` (both eras) and HTTP+SSE on ``/sse``.

        Binds 127.0.0.1 by default and then accepts only local ``Host`` and ``Origin`` values; see
        ``HttpTransportOptions`` for paths, allow-lists, limits, session settings and bearer-token
        authentication. ``ssl_context`` serves HTTPS. ``task_status.started()`` receives the bound port.
        ``auth`` protects the server with OAuth (``trio_mcp.auth.ResourceServerAuth``: metadata, challenges,
        the ``scopes=`` of tools, resources and prompts). To serve several servers on one port, see
        ``serve_http_many``.
        """
        from ..transports.streamable_http import HttpTransportOptions, serve_mounts

        options = options or HttpTransportOptions()
        if auth is not None:
            options = attrs.evolve(options, auth=auth)
        with serving_console(), collapse_exception_groups():  # a port in use is an OSError, not a group of one
            async with _bound(host, port) as listeners:  # before the lifespan: a port in use never enters it
                async with self.running():
                    _freeze_startup_objects()
                    await serve_mounts(
                        {"": self.http_mount(options)},
                        host,
                        ssl_context=ssl_context,
                        listeners=listeners,
                        task_status=task_status,
                    )

    async def serve_websocket(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
        **options: Any,
    ) -> NoReturn:
        """Serve MCP over WebSocket until cancelled (NOT part of the MCP specification; see
        ``trio_mcp.transports.websocket`` for why and for ``options``: Origin allow-list, size cap, pings)."""
        from ..transports.websocket import serve_websocket

        with serving_console(), collapse_exception_groups():  # a port in use is an OSError, not a group of one
            async with _bound(host, port) as listeners, self.running():  # a port in use never enters the lifespan
                _freeze_startup_objects()
                await serve_websocket(
                    self.serve_connection, host, listeners=listeners, task_status=task_status, **options
                )

    def http_mount(self, options: HttpTransportOptions) -> HttpMount:
        """This server on an HTTP listener (``serve_mounts``): its connections, tool header paths, scopes and
        tasks."""
        from ..transports.streamable_http import Mount

        return Mount(self.serve_connection, self.tool_header_paths, options, self.required_scopes, self.tasks)

    def tool_header_paths(self, name: str) -> dict[str, tuple[str, ...]] | None:
        """The ``x-mcp-header`` names of a tool's parameters and where each sits in its arguments."""
        tool = self.tools.get(name)
        if tool is None:
            return None
        return tool.header_paths

    async def serve_stdio(
        self, *, protect_stdout: bool = True, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve one client on this process's stdin/stdout; returns when stdin closes.

        While serving, anything written to ``sys.stdout`` (a stray ``print()``) goes to stderr instead, so
        the protocol stream stays clean; see ``stdio_server_stream``. So do trio_mcp's warnings and errors (a
        crashed tool's traceback under the error id its client was told) until the application configures
        logging; every ``serve_*`` does this (docs/server.md, "When a handler fails").
        """
        with serving_console(), collapse_exception_groups():
            async with self.running():
                _freeze_startup_objects()
                async with stdio_server_stream(protect_stdout=protect_stdout) as stream:
                    await self.serve_connection(stream, task_status=task_status)


async def serve_http_many(
    servers: Mapping[str, Server],
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    options: HttpTransportOptions | None = None,
    ssl_context: ssl.SSLContext | None = None,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> NoReturn:
    """Serve several servers on one listener, each under its path prefix: ``{"/weather": weather}`` answers
    on ``/weather/mcp`` (and ``/weather/sse``). Each server's lifespan runs around the whole listener."""
    from ..transports.streamable_http import HttpTransportOptions, serve_mounts

    with serving_console(), collapse_exception_groups():
        async with _bound(host, port) as listeners, contextlib.AsyncExitStack() as stack:
            for server in servers.values():
                await stack.enter_async_context(server.running())
            _freeze_startup_objects()
            mounts = {
                prefix: server.http_mount(options or HttpTransportOptions()) for prefix, server in servers.items()
            }
            await serve_mounts(mounts, host, ssl_context=ssl_context, listeners=listeners, task_status=task_status)
    raise AssertionError("unreachable")


@contextlib.asynccontextmanager
async def _bound(host: str, port: int) -> AsyncIterator[list[trio.SocketListener]]:
    """The listening sockets, bound before the servers' lifespans run, and closed however serving ends."""
    listeners = await trio.open_tcp_listeners(port, host=host)
    try:
        yield listeners
    finally:
        with trio.CancelScope(shield=True):
            for listener in listeners:
                await listener.aclose()
