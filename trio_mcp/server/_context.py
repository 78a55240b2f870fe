"""The per-request ``Context`` that handlers receive by annotating a parameter with it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from .._session import InboundRequest
from .._wire.convert import WireFormatError, from_wire
from ..errors import INVALID_REQUEST, METHOD_NOT_FOUND, McpError, RemoteProtocolError
from ..types import ClientCapabilities, Implementation, ListRootsResult, Root

if TYPE_CHECKING:
    from ._connection import ServerConnection
    from ._server import Server

__all__ = ["Context"]


class Context:
    """What a handler can know and do about the request it is serving.

    Cancellation is visible, not hidden: ``cancel_scope`` is the scope the peer's ``notifications/cancelled``
    cancels, and ``cancel_requested`` is set when that notification arrives.
    """

    __slots__ = ("_request", "_connection")

    def __init__(self, request: InboundRequest, connection: ServerConnection) -> None:
        self._request = request
        self._connection = connection

    @property
    def request_id(self) -> str | int:
        """The JSON-RPC id of the request being served."""
        return self._request.id

    @property
    def method(self) -> str:
        """The method being served, e.g. ``tools/call``."""
        return self._request.method

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``_meta`` ({} when absent)."""
        return self._request.meta

    @property
    def cancel_scope(self) -> trio.CancelScope:
        """The scope around this handler; a peer cancel cancels it."""
        return self._request.cancel_scope

    @property
    def cancel_requested(self) -> trio.Event:
        """Set when the peer sent ``notifications/cancelled`` for this request."""
        return self._request.cancel_requested

    @property
    def server(self) -> Server:
        """The ``Server`` this request arrived at."""
        return self._connection.server

    @property
    def lifespan_state(self) -> Any:
        """Whatever the server's lifespan context manager yielded (None without a lifespan)."""
        return self._connection.server.lifespan_state

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision in use on this connection."""
        return self._connection.protocol_version

    @property
    def client_info(self) -> Implementation | None:
        """The client's name and version, as it declared them."""
        return self._connection.client_info

    @property
    def client_capabilities(self) -> ClientCapabilities:
        """What the client declared it can do."""
        return self._connection.client_capabilities

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell the client how far along this request is (a no-op unless it asked with a progressToken)."""
        await self._request.report_progress(progress, total, message)

    async def list_roots(self, *, timeout: float | None = 60.0) -> list[Root]:
        """Ask the client for its roots (``roots/list``).

        Raises ``McpError`` when the client did not declare the roots capability or refuses, and
        ``RequestTimeout`` when it does not answer; cancelling this handler cancels the request.
        """
        if self.client_capabilities.roots is None:
            raise McpError(METHOD_NOT_FOUND, "the client did not declare the roots capability")
        raw = await self._server_request("roots/list", None, timeout)
        try:
            return from_wire(raw, ListRootsResult).roots
        except WireFormatError as exc:
            raise RemoteProtocolError(f"client sent an invalid roots/list result: {exc}") from None

    async def _server_request(self, method: str, params: dict[str, Any] | None, timeout: float | None) -> Any:
        refusal = self._connection.lifecycle.server_request_refusal(method)
        if refusal is not None:
            raise McpError(INVALID_REQUEST, refusal)
        return await self._request.request(method, params, timeout=timeout)
