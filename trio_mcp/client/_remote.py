"""Clients for servers reached over the network: HTTP (every era, with fallbacks) and WebSocket.

``connect_http_client`` follows the backward-compatibility rules of the 2026-07-28 transport page: it first
tries a stateless request (``server/discover``); a recognised modern error means a modern server, anything
else a legacy one, which gets the ``initialize`` handshake over Streamable HTTP and, if that endpoint refuses
POST, the 2024-11-05 HTTP+SSE transport.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypedDict
from urllib.parse import urlsplit

import trio

from .._util import collapse_exception_groups
from .._wire.features import Feature, has
from .._wire.versions import LATEST_LEGACY_VERSION, LEGACY_VERSIONS, MODERN_VERSIONS, V2024_11_05
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
from ..transports._client.h11client import HttpClient
from ..transports._client.session import HttpAuth, LegacyTransportRequired, StreamableHttpSessionStream
from ..transports._client.sse import SseClientStream
from ..transports._client.stateless import StatelessHttpStream
from ..transports._client.websocket import connect_websocket_stream
from ._client import Client
from ._options import ClientOptions, check_client_options, check_timeout
from ._requests import supported_versions

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "WebSocketOptions",
    "connect_http_client",
    "connect_websocket_client",
    "open_http_client",
    "open_websocket_client",
]

#: How long to wait for a session's GET stream to open (or be refused) before handing the client over.
_STANDALONE_WAIT = 5.0

#: JSON-RPC errors only a 2026-07-28 server sends: seeing one means "modern server, fix the request".
_MODERN_ERRORS = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})


class WebSocketOptions(TypedDict, total=False):
    """``transport_options`` of the WebSocket clients: what ``connect_websocket_stream`` takes besides the URL."""

    ssl_context: ssl.SSLContext | None
    max_message_bytes: int
    ping_interval: float | None
    pong_timeout: float
    write_timeout: float
    connect_timeout: float
    close_timeout: float


def _check_url(url: object, schemes: tuple[str, ...]) -> None:
    if not isinstance(url, str):
        raise TypeError(f"url must be a str, not {type(url).__name__}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ValueError(f"url {url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in schemes or not parts.hostname:
        raise ValueError(f"url must be an absolute {' or '.join(s + '://' for s in schemes)} URL, not {url!r}")


def _check_headers(headers: object) -> None:
    if headers is not None and (
        not isinstance(headers, Mapping)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
    ):
        raise TypeError("headers must be a mapping of str to str, or None")


def _check_auth(auth: object) -> None:
    if auth is not None and not callable(getattr(auth, "auth_headers", None)):
        raise TypeError(f"auth must be an authorization provider (OAuthClientProvider), not {type(auth).__name__}")


def _check_http_options(url: object, *, headers: object, auth: object, http: object = None) -> None:
    _check_url(url, ("http", "https"))
    _check_headers(headers)
    _check_auth(auth)
    if http is not None and not isinstance(http, HttpClient):
        raise TypeError(f"http must be a trio_mcp HttpClient or None, not {type(http).__name__}")


def _check_websocket_options(
    url: object, *, origin: object, headers: object, transport_options: object, auth: object = None
) -> None:
    _check_url(url, ("ws", "wss"))
    _check_headers(headers)
    _check_auth(auth)
    if origin is not None and not isinstance(origin, str):
        raise TypeError(f"origin must be a str or None, not {type(origin).__name__}")
    if transport_options is None:
        return
    if not isinstance(transport_options, Mapping):
        raise TypeError(f"transport_options must be a mapping, not {type(transport_options).__name__}")
    known = WebSocketOptions.__annotations__
    for name, value in transport_options.items():
        if name not in known:
            raise TypeError(f"unknown WebSocket transport option {name!r}; the options are: {', '.join(known)}")
        if name.endswith("_timeout") or name == "ping_interval":
            check_timeout(f"transport_options[{name!r}]", value, allow_none=name == "ping_interval")


async def connect_http_client(
    nursery: trio.Nursery,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    http: HttpClient | None = None,
    auth: HttpAuth | None = None,
    **client_options: Unpack[ClientOptions],
) -> Client:
    """Connect to the MCP endpoint at ``url`` and return an initialized ``Client`` whose tasks live in ``nursery``.

    ``protocol_version`` "auto" finds the server's era (stateless 2026-07-28, Streamable HTTP sessions, or the
    2024-11-05 HTTP+SSE transport); a revision pins it. ``headers`` go with every request (``Authorization``,
    say). ``auth`` is an authorization provider (``trio_mcp.client._oauth.OAuthClientProvider``): it supplies the
    ``Authorization`` header and answers the server's 401/403 by authorizing (Streamable HTTP only; the
    2024-11-05 HTTP+SSE fallback gets its headers once). Call ``await client.aclose()`` when done: it ends the session (DELETE) and closes the connections.
    """
    check_client_options(client_options)
    _check_http_options(url, headers=headers, http=http, auth=auth)
    options: dict[str, Any] = dict(client_options)
    protocol_version = options.pop("protocol_version", "auto")
    own_http = http is None
    if http is None:
        http = HttpClient()
    try:
        client = await _connect(nursery, url, dict(headers or {}), http, protocol_version, options, auth)
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
                legacy = supported is not None and any(v in supported for v in LEGACY_VERSIONS)
                if version != "auto" or (_is_modern_answer(exc) and not legacy):
                    raise
                break
            except (RemoteProtocolError, RequestTimeout):
                if version != "auto":
                    raise
                break  # no usable server/discover: a legacy server
        version = LATEST_LEGACY_VERSION
    if has(version, Feature.HTTP_SSE):
        return await _sse(nursery, url, headers, http, options, auth)
    try:
        session = await StreamableHttpSessionStream.connect(nursery, url, http=http, headers=headers, auth=auth)
        client = await _start(nursery, session, version, options)
    except LegacyTransportRequired:
        return await _sse(nursery, url, headers, http, options, auth)

    async def reconnect(ended: MessageStream) -> MessageStream | None:
        if not (isinstance(ended, StreamableHttpSessionStream) and ended.session_expired):
            return None
        await ended.aclose()
        return await StreamableHttpSessionStream.connect(nursery, url, http=http, headers=headers, auth=auth)

    client.enable_session_renewal(reconnect)
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
        nursery,
        url,
        http=http,
        headers=headers,
        header_paths_for=header_paths_for,
        protocol_version=version,
        auth=auth,
    )
    client = Client(stream, protocol_version=version, **options)
    await client.start(nursery)
    return client


async def _sse(
    nursery: trio.Nursery,
    url: str,
    headers: dict[str, str],
    http: HttpClient,
    options: dict[str, Any],
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
    http: HttpClient | None = None,
    auth: HttpAuth | None = None,
    **client_options: Unpack[ClientOptions],
) -> AsyncIterator[Client]:
    """Yield an initialized ``Client`` for the MCP endpoint at ``url`` (see ``connect_http_client``)."""
    check_client_options(client_options)
    _check_http_options(url, headers=headers, http=http, auth=auth)
    with collapse_exception_groups():
        async with trio.open_nursery() as nursery:
            client = await connect_http_client(nursery, url, headers=headers, http=http, auth=auth, **client_options)
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
    auth: HttpAuth | None = None,
    transport_options: WebSocketOptions | None = None,
    **client_options: Unpack[ClientOptions],
) -> Client:
    """Connect over WebSocket (``mcp`` subprotocol; not part of the MCP specification) and return the client.

    ``auth`` is an authorization provider, as for ``connect_http_client``: its headers go with the upgrade and a
    401/403 refusal of the upgrade goes to it (a refusal it cannot resolve raises ``WebSocketRejected``).
    ``transport_options`` go to ``connect_websocket_stream`` (message cap, pings, timeouts, TLS).
    """
    check_client_options(client_options)
    _check_websocket_options(url, origin=origin, headers=headers, transport_options=transport_options, auth=auth)
    stream = await connect_websocket_stream(
        nursery, url, origin=origin, headers=headers, auth=auth, **(transport_options or {})
    )
    client = Client(stream, **client_options)
    await client.start(nursery)
    return client


@asynccontextmanager
async def open_websocket_client(
    url: str,
    *,
    origin: str | None = None,
    headers: Mapping[str, str] | None = None,
    auth: HttpAuth | None = None,
    transport_options: WebSocketOptions | None = None,
    **client_options: Unpack[ClientOptions],
) -> AsyncIterator[Client]:
    """Yield an initialized ``Client`` connected over WebSocket (see ``connect_websocket_client``)."""
    check_client_options(client_options)
    _check_websocket_options(url, origin=origin, headers=headers, transport_options=transport_options, auth=auth)
    with collapse_exception_groups():
        async with trio.open_nursery() as nursery:
            client = await connect_websocket_client(
                nursery,
                url,
                origin=origin,
                headers=headers,
                auth=auth,
                transport_options=transport_options,
                **client_options,
            )
            try:
                yield client
            finally:
                await client.aclose()
