"""``ClientGroup``: several servers at once, each under its own name, owned by one nursery."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

import attrs
import trio

from .._util import collapse_exception_groups
from ..errors import TrioMcpError
from ..transports._base import MessageStream
from ..transports.stdio import StderrMode, check_stdio_options
from ..types import CallToolResult, Tool
from ._client import Client
from ._connect import connect_client
from ._options import DEFAULT_TIMEOUT, ClientOptions, ProgressHandler, check_client_options
from ._stdio import connect_stdio_client

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ClientGroup"]

logger = logging.getLogger("trio_mcp.client")


class ClientGroup:
    """Clients for several servers, each under a name, with their tools namespaced as ``<server><sep><tool>``.

    ``async with ClientGroup() as group: await group.connect_stdio("weather", [...])``. The group owns every
    client in its own nursery, so connections may come and go in any order (no LIFO ``AsyncExitStack``
    juggling). Each member runs in a nursery of its own: a server that dies, or a member's task that fails,
    closes that client only (its calls raise ``ConnectionClosed``) and is logged; the others keep working.
    Leaving the block closes every client at once, each process in the spec's shutdown order.

    ``separator`` joins server and tool names (default ``"."``, which tool names may contain too: the server
    name, which may not, is what comes before the first separator).
    """

    def __init__(self, *, separator: str = ".") -> None:
        if not separator:
            raise ValueError("separator must not be empty")
        self.separator = separator
        self._clients: dict[str, Client] = {}
        self._nursery: trio.Nursery | None = None
        self._lifetime: AbstractAsyncContextManager[ClientGroup] | None = None

    # -- lifetime ---------------------------------------------------------------------------------

    async def __aenter__(self) -> ClientGroup:
        """Open the group's nursery; connect servers inside the block."""
        if self._lifetime is not None:
            raise RuntimeError("a ClientGroup can be entered only once")
        self._lifetime = self._run()
        return await self._lifetime.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """Close every client (each stdio server in the spec's shutdown order), then the nursery."""
        assert self._lifetime is not None
        return await self._lifetime.__aexit__(exc_type, exc, tb)

    @asynccontextmanager
    async def _run(self) -> AsyncIterator[ClientGroup]:
        with collapse_exception_groups():
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                try:
                    yield self
                finally:
                    await self.aclose()
                    nursery.cancel_scope.cancel()
                    self._nursery = None

    async def aclose(self) -> None:
        """Close every client at once (shielded); the group stays usable for new connections until it exits."""
        clients, self._clients = list(self._clients.items()), {}
        with trio.CancelScope(shield=True):
            async with trio.open_nursery() as nursery:
                for name, client in clients:
                    nursery.start_soon(_close_quietly, name, client)

    # -- membership -------------------------------------------------------------------------------

    async def connect_stdio(
        self,
        name: str,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrMode = "forward",
        **client_options: Unpack[ClientOptions],
    ) -> Client:
        """Start ``command`` as the server called ``name`` and return its initialized client.

        Raises what ``open_stdio_client`` raises when the server cannot be started or initialized, and
        ``ValueError`` for a name already in use or containing the separator.
        """
        check_client_options(client_options)
        check_stdio_options(command, env=env, cwd=cwd, stderr=stderr)

        async def connect(nursery: trio.Nursery) -> Client:
            return await connect_stdio_client(nursery, command, env=env, cwd=cwd, stderr=stderr, **client_options)

        return await self._add(name, connect)

    async def connect(self, name: str, stream: MessageStream, **client_options: Unpack[ClientOptions]) -> Client:
        """Add the server at the other end of ``stream`` (any transport) as ``name``; returns its client."""
        check_client_options(client_options)

        async def connect(nursery: trio.Nursery) -> Client:
            return await connect_client(nursery, stream, **client_options)

        return await self._add(name, connect)

    async def disconnect(self, name: str) -> None:
        """Close the client called ``name`` and forget it; raises ``KeyError`` for an unknown name."""
        client = self._clients.pop(name)
        await _close_quietly(name, client)

    def __getitem__(self, name: str) -> Client:
        """The client of the server called ``name``."""
        return self._clients[name]

    def __contains__(self, name: object) -> bool:
        """True if a server called ``name`` is in the group (closed or not)."""
        return name in self._clients

    def __iter__(self) -> Iterator[str]:
        """The servers' names (a snapshot, so members may come and go while iterating)."""
        return iter(list(self._clients))

    def __len__(self) -> int:
        """How many servers are in the group."""
        return len(self._clients)

    @property
    def names(self) -> list[str]:
        """The servers' names, in the order they were added."""
        return list(self._clients)

    async def _add(self, name: str, connect: Callable[[trio.Nursery], Awaitable[Client]]) -> Client:
        if self._nursery is None:
            raise RuntimeError("use the ClientGroup in 'async with' before connecting")
        if not name or self.separator in name:
            raise ValueError(f"server name {name!r} must be non-empty and must not contain {self.separator!r}")
        if name in self._clients:
            raise ValueError(f"a server called {name!r} is already in the group")
        with collapse_exception_groups():
            client: Client = await self._nursery.start(self._host, name, connect)
        self._clients[name] = client
        return client

    async def _host(
        self,
        name: str,
        connect: Callable[[trio.Nursery], Awaitable[Client]],
        *,
        task_status: trio.TaskStatus[Client] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run one member in a nursery of its own, so that its failure stays its own."""
        client: Client | None = None
        started = False
        try:
            async with trio.open_nursery() as nursery:
                client = await connect(nursery)
                started = True
                task_status.started(client)
        except Exception as exc:
            if not started:
                raise
            logger.error("server %r of the client group failed; its client is closed: %r", name, exc)
        finally:
            if client is not None:
                await _close_quietly(name, client)

    # -- tools across servers ---------------------------------------------------------------------

    def split_name(self, qualified: str) -> tuple[str, str]:
        """``"weather.forecast"`` → ``("weather", "forecast")``; ``ValueError`` without a separator."""
        server, sep, tool = qualified.partition(self.separator)
        if not sep or not server or not tool:
            raise ValueError(f"{qualified!r} is not '<server>{self.separator}<tool>'")
        return server, tool

    async def list_tools(self) -> list[Tool]:
        """Every tool of every server, named ``<server><sep><tool>``, servers in the order they were added.

        Servers are asked concurrently. One that fails (closed, timed out, answered with an error) is left
        out with a warning rather than failing the whole listing; servers without tools are skipped.
        """
        found: dict[str, list[Tool]] = {}
        members = list(self._clients.items())

        async def list_one(name: str, client: Client) -> None:
            try:
                if client.server_capabilities.tools is None:
                    return
                found[name] = [tool async for tool in client.iter_tools()]
            except TrioMcpError as exc:
                logger.warning("leaving out the tools of server %r: %s", name, exc)

        with collapse_exception_groups():
            async with trio.open_nursery() as nursery:
                for name, client in members:
                    nursery.start_soon(list_one, name, client)
        return [
            attrs.evolve(tool, name=f"{name}{self.separator}{tool.name}")
            for name, _ in members
            for tool in found.get(name, ())
        ]

    async def call_tool(
        self,
        qualified_name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        on_progress: ProgressHandler | None = None,
        max_total_timeout: float | None = None,
        meta: dict[str, Any] | None = None,
        validate_output: bool = True,
    ) -> CallToolResult:
        """Call ``<server><sep><tool>`` on the right server; the keyword options are those of ``Client.call_tool``.

        Raises ``KeyError`` for a server not in the group, and whatever that client's call raises.
        """
        client, tool = self._route(qualified_name)
        return await client.call_tool(
            tool,
            arguments,
            timeout=timeout,
            on_progress=on_progress,
            max_total_timeout=max_total_timeout,
            meta=meta,
            validate_output=validate_output,
        )

    async def call_tool_as_task(
        self, qualified_name: str, arguments: dict[str, Any] | None = None, **options: Any
    ) -> CallToolResult:
        """``Client.call_tool_as_task`` on the right server (cancelling the call cancels the task there)."""
        client, tool = self._route(qualified_name)
        return await client.call_tool_as_task(tool, arguments, **options)

    def _route(self, qualified_name: str) -> tuple[Client, str]:
        server, tool = self.split_name(qualified_name)
        client = self._clients.get(server)
        if client is None:
            raise KeyError(f"no server called {server!r} in this group (have: {', '.join(self._clients) or 'none'})")
        return client, tool


async def _close_quietly(name: str, client: Client) -> None:
    try:
        await client.aclose()
    except Exception:
        logger.exception("closing the client of server %r failed", name)
