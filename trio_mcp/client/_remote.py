"""Clients for servers reached over the network: HTTP (every era, with fallbacks) and WebSocket.

``connect_http_client`` follows the backward-compatibility rules of the 2026-07-28 transport page: it first
tries a stateless request (``server/discover``); a recognised modern error means a modern server, anything
else a legacy one, which gets the ``initialize`` handshake over Streamable HTTP and, if that endpoint refuses
POST, the 2024-11-05 HTTP+SSE transport.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Mapping

import trio

from .._util import collapse_exception_groups
from .._wire.versions import HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_VERSIONS, V2024_11_05
from ..errors import (
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    RemoteProtocolError,
    RequestTimeout,
)
from ..transports._base import MessageStream
from ..transports._http_client import HttpClient
from ..transports.sse_client import SseClientStream
from ..transports.streamable_http_client import (
    LegacyTransportRequired,
    HttpAuth,
    StatelessHttpStream,
    StreamableHttpSessionStream,
)
from ..transports.websocket import connect_websocket_stream
from ._client import Client, supported_versions

__all__ = ["open_http_client", "connect_http_client", "open_websocket_client", "connect_websocket_client"]

#: How long to wait for a session's GET stream to open (or be refused) before handing the client over.
_STANDALONE_WAIT = 5.0

#: JSON-RPC errors only a 2026-07-28 server sends: seeing one means "modern server, fix the request".
_MODERN_ERRORS = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})


async def connect_http_client(
    nursery: trio.Nursery,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    http: HttpClient | None = None,
    protocol_version: str = "auto",
    auth: HttpAuth | None = None,
    **client_options: Any,
) -> Client:
    """Connect to the MCP endpoint at ``url`` and return an initialized ``Client`` whose tasks live in ``nursery``.

    ``protocol_version`` "auto" finds the server's era (stateless 2026-07-28, Streamable HTTP sessions, or the
    2024-11-05 HTTP+SSE transport); a revision pins it. ``headers`` go with every request (``Authorization``,
    say). ``auth`` is an authorization provider (``trio_mcp.client._oauth.OAuthClientProvider``): it supplies the
    ``Authorization`` header and answers the server's 401/403 by authorizing (Streamable HTTP only; the
    2024-11-05 HTTP+SSE fallback gets its headers once). Call ``await client.aclose()`` when done: it ends the session (DELETE) and closes the connections.
    """
    own_http = http is None
    if http is None:
        http = HttpClient()
    try:
        client = await _connect(nursery, url, dict(headers or {}), http, protocol_version, client_options, auth)
    except BaseException:
        if own_http:
            with trio.CancelScope(shield=True):
                await http.aclose()
        raise
    if own_http:
        client.add_close_callback(http.aclose)
    return client


async def _connect(
    nursery: trio.Nursery,
    url: str,
    headers: dict[str, str],
    http: HttpClient,
    version: str,
    options: dict[str, Any],
    auth: HttpAuth | None = None,
) -> Client:
    if version == "auto" or version in MODERN_VERSIONS:
        modern = version if version in MODERN_VERSIONS else MODERN_VERSIONS[-1]
        for attempt in range(2):
            try:
                return await _stateless(nursery, url, headers, http, modern, options, auth)
            except McpError as exc:
                supported = supported_versions(exc)
                known = [v for v in MODERN_VERSIONS if v in supported] if supported is not None else []
                if known and attempt == 0:
                    modern = known[-1]  # a modern server named what it speaks: retry with that, once
                    continue
                handshake = supported is not None and any(v in supported for v in HANDSHAKE_VERSIONS)
                if version != "auto" or (_is_modern_answer(exc) and not handshake):
                    raise
                break
            except (RemoteProtocolError, RequestTimeout):
                if version != "auto":
                    raise
                break  # no usable server/discover: a legacy server
        version = LATEST_HANDSHAKE_VERSION
    if version == V2024_11_05:
        return await _sse(nursery, url, headers, http, options, auth)
    if version not in HANDSHAKE_VERSIONS:
        raise ValueError(f"unknown protocol_version {version!r}")
    try:
        session = await StreamableHttpSessionStream.connect(nursery, url, http=http, headers=headers, auth=auth)
        client = await _start(nursery, session, version, options)
    except LegacyTransportRequired:
        return await _sse(nursery, url, headers, http, options, auth)
    # Some servers drop what they send before the GET stream exists: let it open (or be refused) first.
    with trio.move_on_after(_STANDALONE_WAIT):
        await session.standalone_settled.wait()
    return client


async def _stateless(
    nursery: trio.Nursery,
    url: str,
    headers: dict[str, str],
    http: HttpClient,
    version: str,
    options: dict[str, Any],
    auth: HttpAuth | None = None,
) -> Client:
    client: Client | None = None

    def header_paths_for(name: str) -> Mapping[str, tuple[str, ...]] | None:
        return client.tool_header_paths(name) if client is not None else None

    stream = await StatelessHttpStream.connect(
        nursery, url, http=http, headers=headers, header_paths_for=header_paths_for, protocol_version=version,
        auth=auth,
    )
    client = Client(stream, protocol_version=version, **options)
    await client.start(nursery)
    return client


async def _sse(
    nursery: trio.Nursery, url: str, headers: dict[str, str], http: HttpClient, options: dict[str, Any],
    auth: HttpAuth | None = None,
) -> Client:
    stream = await SseClientStream.connect(nursery, url, http=http, headers=headers, auth=auth)
    return await _start(nursery, stream, V2024_11_05, options)


async def _start(nursery: trio.Nursery, stream: MessageStream, version: str, options: dict[str, Any]) -> Client:
    client = Client(stream, protocol_version=version, **options)
    await client.start(nursery)
    return client


def _is_modern_answer(error: McpError) -> bool:
    """A JSON-RPC error body only a modern server sends; -32601 counts too (a modern server's 404 carries it,
    where a legacy server refuses a request without a session with a bare 400 or 404)."""
    return error.code in _MODERN_ERRORS or error.code == METHOD_NOT_FOUND


@asynccontextmanager
async def open_http_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    protocol_version: str = "auto",
    auth: HttpAuth | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Yield an initialized ``Client`` for the MCP endpoint at ``url`` (see ``connect_http_client``)."""
    with collapse_exception_groups():
        async with trio.open_nursery() as nursery:
            client = await connect_http_client(
                nursery, url, headers=headers, protocol_version=protocol_version, auth=auth, **client_options
            )
            try:
                yield client
            finally:
                await client.aclose()


async def connect_websocket_client(
    nursery: trio.Nursery,
    url: str,
    *,
    origin: str | None = None,
    headers: Mapping[str, str] | None = None,
    transport_options: Mapping[str, Any] | None = None,
    **client_options: Any,
) -> Client:
    """Connect over WebSocket (``mcp`` subprotocol; not part of the MCP specification) and return the client.

    ``transport_options`` go to ``connect_websocket_stream`` (message cap, pings, timeouts, TLS).
    """
    stream = await connect_websocket_stream(nursery, url, origin=origin, headers=headers, **(transport_options or {}))
    return await _start(nursery, stream, client_options.pop("protocol_version", "auto"), client_options)


@asynccontextmanager
async def open_websocket_client(
    url: str,
    *,
    origin: str | None = None,
    headers: Mapping[str, str] | None = None,
    transport_options: Mapping[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Yield an initialized ``Client`` connected over WebSocket (see ``connect_websocket_client``)."""
    with collapse_exception_groups():
        async with trio.open_nursery() as nursery:
            client = await connect_websocket_client(
                nursery, url, origin=origin, headers=headers, transport_options=transport_options, **client_options
            )
            try:
                yield client
            finally:
                await client.aclose()
