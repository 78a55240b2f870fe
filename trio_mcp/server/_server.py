"""The ``Server`` registry: what a server offers, independent of any one connection."""

from __future__ import annotations

from typing import Any, Callable, Literal, Mapping, Sequence, TypeVar

import trio

from .._wire.convert import to_wire
from ..transports._base import MessageStream
from ..transports.stdio import stdio_server_stream
from ..types import (
    Icon,
    Implementation,
    ServerCapabilities,
    ToolAnnotations,
    ToolExecution,
    ToolsCapability,
)
from ._connection import ServerConnection
from ._tools import ToolDefinition, make_tool

__all__ = ["Server"]

F = TypeVar("F", bound=Callable[..., Any])


class Server:
    """An MCP server: register tools with decorators, then serve it over any transport.

    The registry is long-lived and shared; every connection gets its own ``ServerConnection`` with its
    own handshake state, so one ``Server`` can serve many clients at once.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: Sequence[Icon] | None = None,
        max_in_flight: int = 256,
        peer_cancel_mode: Literal["interrupt", "signal"] = "interrupt",
    ) -> None:
        self.info = Implementation(
            name=name,
            version=version,
            title=title,
            description=description,
            website_url=website_url,
            icons=list(icons) if icons else None,
        )
        self.instructions = instructions
        self.max_in_flight = max_in_flight
        self.peer_cancel_mode = peer_cancel_mode
        self.tools: dict[str, ToolDefinition] = {}
        self.lifespan_state: Any = None
        self._tool_list_cache: dict[str, list[dict[str, Any]]] = {}

    # -- registration -----------------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        icons: Sequence[Icon] | None = None,
        execution: ToolExecution | None = None,
        input_schema: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: Mapping[str, Any] | None = None,
        run_in_thread: bool = True,
    ) -> Callable[[F], F]:
        """Register the decorated function as a tool.

        The input schema comes from the type hints (``Annotated[T, Field(description=...)]`` for per-argument
        docs) unless ``input_schema`` is given; the description defaults to the docstring. A parameter
        annotated ``Context`` receives the request context. Sync functions run in a worker thread unless
        ``run_in_thread=False``.
        """

        def register(fn: F) -> F:
            self.add_tool(
                fn,
                name=name,
                title=title,
                description=description,
                annotations=annotations,
                icons=icons,
                execution=execution,
                input_schema=input_schema,
                structured_output=structured_output,
                meta=meta,
                run_in_thread=run_in_thread,
            )
            return fn

        return register

    def add_tool(self, fn: Callable[..., Any], **options: Any) -> ToolDefinition:
        """Register ``fn`` as a tool (the non-decorator form of ``tool()``); returns its definition."""
        definition = make_tool(fn, **options)
        if definition.name in self.tools:
            raise ValueError(f"a tool named {definition.name!r} is already registered")
        self.tools[definition.name] = definition
        self._tool_list_cache.clear()
        return definition

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; raises ``KeyError`` if there is none by that name."""
        del self.tools[name]
        self._tool_list_cache.clear()

    # -- what connections ask of the registry ------------------------------------------------------

    def capability_names(self) -> frozenset[str]:
        """The server capabilities this registry supports ("tools", ...)."""
        return frozenset({"tools"}) if self.tools else frozenset()

    def capabilities(self, version: str) -> ServerCapabilities:
        """The capabilities object for ``initialize`` on ``version``."""
        names = self.capability_names()
        return ServerCapabilities(tools=ToolsCapability(list_changed=True) if "tools" in names else None)

    def initialize_result(self, version: str) -> dict[str, Any]:
        """The ``initialize`` result for a client that negotiated ``version``."""
        info = to_wire(self.info)
        if version < "2025-06-18":
            info.pop("title", None)
        if version < "2025-11-25":
            for key in ("description", "websiteUrl", "icons"):
                info.pop(key, None)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": to_wire(self.capabilities(version)),
            "serverInfo": info,
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def tool_list(self, version: str) -> list[dict[str, Any]]:
        """Every tool as ``version`` defines the ``Tool`` object, in registration order (cached)."""
        cached = self._tool_list_cache.get(version)
        if cached is None:
            cached = self._tool_list_cache[version] = [tool.wire(version) for tool in self.tools.values()]
        return cached

    # -- serving ----------------------------------------------------------------------------------

    async def serve_connection(
        self, stream: MessageStream, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve one client over ``stream`` until it disconnects (for custom transports and tests)."""
        await ServerConnection(self, stream).run(task_status=task_status)

    async def serve_stdio(
        self, *, protect_stdout: bool = True, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve one client on this process's stdin/stdout; returns when stdin closes.

        While serving, anything written to ``sys.stdout`` (a stray ``print()``) goes to stderr instead, so
        the protocol stream stays clean; see ``stdio_server_stream``.
        """
        async with stdio_server_stream(protect_stdout=protect_stdout) as stream:
            await self.serve_connection(stream, task_status=task_status)
