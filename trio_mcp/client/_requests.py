"""How a request leaves the client: what replaces the methods the modern revision removed, how many input
rounds one request may take, and the few conversions every request method shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from .._session import Session
from .._wire.convert import WireFormatError, from_wire
from ..errors import UNSUPPORTED_PROTOCOL_VERSION, McpError, RemoteProtocolError
from ..transports._base import as_connection_closed
from ..types import ProgressNotificationParams
from ._options import ProgressHandler

T = TypeVar("T")


async def request_on(session: Session, method: str, params: dict[str, Any] | None, options: dict[str, Any]) -> Any:
    """``session.request``; a transport's note that the connection was lost before the answer becomes
    ``ConnectionClosed``, so callers never see transport failures as ``McpError``."""
    try:
        return await session.request(method, params, **options)
    except McpError as exc:
        closed = as_connection_closed(exc)
        if closed is None:
            raise
        raise closed from None


#: What a caller uses instead of the legacy-era methods 2026-07-28 removed (the method table says which).
REPLACED_IN_STATELESS: Final = {
    "resources/subscribe": "use client.listen(resource_uris=[...])",
    "resources/unsubscribe": "leave the client.listen() block",
    "logging/setLevel": "set_logging_level() stores the level and sends it with every request",
}
#: How many input rounds one request may take before the server is assumed to loop.
MAX_INPUT_ROUNDS: Final = 16

#: The level a 2026-07-28 client with an ``on_log`` callback asks for until ``set_logging_level`` picks one
#: (the usual default of legacy-era servers, which send logs unasked).
DEFAULT_LOG_LEVEL: Final = "info"


def supported_versions(error: McpError) -> list[str] | None:
    """The versions a modern server listed in an UnsupportedProtocolVersion error (None: not that error)."""
    if error.code != UNSUPPORTED_PROTOCOL_VERSION or not isinstance(error.data, dict):
        return None
    supported = error.data.get("supported")
    return [v for v in supported if isinstance(v, str)] if isinstance(supported, list) else None


def cursor_params(cursor: str | None) -> dict[str, Any] | None:
    return {"cursor": cursor} if cursor is not None else None


def typed_progress(handler: ProgressHandler) -> Callable[[dict[str, Any]], Any]:
    def on_progress(params: dict[str, Any]) -> Any:
        return handler(from_wire(params, ProgressNotificationParams))

    return on_progress


def parse_result(raw: Any, cls: type[T], method: str) -> T:
    """A result as its wire type; one the server got wrong is a ``RemoteProtocolError`` naming the method."""
    try:
        return from_wire(raw, cls)
    except WireFormatError as exc:
        raise RemoteProtocolError(f"server sent an invalid {method} result: {exc}") from None
