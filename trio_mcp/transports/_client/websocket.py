"""MCP over WebSocket, client side (not part of the MCP specification): the upgrade to a ``ws://`` or ``wss://``
URL with the ``mcp`` subprotocol, and the authorization retry around it. ``trio_mcp.transports.websocket`` has the
wire rules and the public names; ``trio_mcp.transports._websocket_stream`` the stream both ends run over."""

from __future__ import annotations

import functools
import ssl
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

import trio
import trio_websocket
from trio_websocket import WebSocketConnection

from ...errors import ConnectionClosed
from .._http_types import decode_headers
from .._websocket_stream import (
    CLOSE_NORMAL,
    DEFAULT_CLOSE_TIMEOUT,
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_PING_INTERVAL,
    DEFAULT_PONG_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    SUBPROTOCOL,
    ReaderGuard,
    WebSocketMessageStream,
    check_max_message_bytes,
    close_quietly,
)

if TYPE_CHECKING:
    from .common import HttpAuth

__all__ = ["WebSocketRejected", "connect_websocket_stream"]


class WebSocketRejected(ConnectionClosed):
    """The server refused the WebSocket upgrade; ``status_code`` is its HTTP status (403: foreign Origin; 401:
    no acceptable token, with the challenge in ``headers["www-authenticate"]``)."""

    def __init__(
        self, status_code: int, body: bytes | None = None, headers: Sequence[tuple[bytes, bytes]] = ()
    ) -> None:
        text = (body or b"").decode("utf-8", "replace").strip()
        super().__init__(f"the server refused the WebSocket upgrade with HTTP {status_code}", detail=text or None)
        self.status_code = status_code
        self.body = body
        #: The refusal's response headers.
        self.headers = decode_headers(headers)


def _parse_url(url: str) -> tuple[bool, str, int, str, str]:
    """``(secure, host, port, resource, host header)`` of a ``ws://`` or ``wss://`` URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("ws", "wss"):
        raise ValueError(f"a WebSocket URL starts with ws:// or wss://, not {url!r}")
    host = parts.hostname
    if not host:
        raise ValueError(f"no host in {url!r}")
    secure = scheme == "wss"
    default_port = 443 if secure else 80
    port = parts.port or default_port
    resource = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    named = f"[{host}]" if ":" in host else host
    host_header = named if port == default_port else f"{named}:{port}"
    return secure, host, port, resource, host_header


async def connect_websocket_stream(
    nursery: trio.Nursery,
    url: str,
    *,
    origin: str | None = None,
    headers: Mapping[str, str] | None = None,
    auth: HttpAuth | None = None,
    ssl_context: ssl.SSLContext | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ping_interval: float | None = DEFAULT_PING_INTERVAL,
    pong_timeout: float = DEFAULT_PONG_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    connect_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
    close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
) -> WebSocketMessageStream:
    """Open a WebSocket to ``url`` (``ws://`` or ``wss://``) with the ``mcp`` subprotocol (not part of the MCP
    specification); its reader and keep-alive tasks run in ``nursery`` until the stream is closed.

    ``origin`` is sent as the ``Origin`` header (browsers always send one; other clients need not), and
    ``headers`` (``Authorization``, say) with the upgrade. ``auth`` is an authorization provider, as for the
    HTTP clients (``OAuthClientProvider``): its headers go with the upgrade, for the ``http(s)://`` form of
    ``url`` (the resource a token is for, and a DPoP proof's ``htu``), and a 401/403 refusal goes to its
    challenge handling, after which the upgrade is tried again (at most twice). Raises ``WebSocketRejected``
    when the server refuses the upgrade (``status_code``, ``headers``), and ``ConnectionClosed`` when no
    connection can be made within ``connect_timeout`` (each attempt) or the server does not select ``mcp``.
    Close it with ``aclose()`` (``Client.aclose()`` does).
    """
    check_max_message_bytes(max_message_bytes)
    secure, host, port, resource, host_header = _parse_url(url)
    base = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in (headers or {}).items()]
    if origin is not None:
        base.append((b"origin", origin.encode("latin-1")))
    if secure and ssl_context is None:
        ssl_context = ssl.create_default_context()
    open_stream = functools.partial(
        _open_stream,
        nursery,
        _Target(url, host, port, resource, host_header, ssl_context),
        max_message_bytes=max_message_bytes,
        ping_interval=ping_interval,
        pong_timeout=pong_timeout,
        write_timeout=write_timeout,
        connect_timeout=connect_timeout,
        close_timeout=close_timeout,
    )
    if auth is None:
        return await open_stream(base)
    from .h11client import HttpClient

    http_url = ("https" if secure else "http") + url[url.index(":") :]
    async with HttpClient() as http:  # for the provider's own requests (refresh, discovery, token endpoint)
        for attempt in range(3):  # the first try, after an authorization, after a DPoP nonce challenge
            sent = dict(await auth.auth_headers("GET", http_url, http=http))
            names = {name.lower().encode("latin-1") for name in sent}
            extra = [(n, v) for n, v in base if n.lower() not in names]
            extra += [(n.encode("latin-1"), v.encode("latin-1")) for n, v in sent.items()]
            try:
                stream = await open_stream(extra)
            except WebSocketRejected as refused:
                if attempt == 2 or refused.status_code not in (401, 403):
                    raise
                challenge = refused.headers.get("www-authenticate")
                nonce = refused.headers.get("dpop-nonce")
                if not await auth.handle_challenge(http, http_url, refused.status_code, challenge, sent, nonce):
                    raise
                continue
            auth.note_success()
            return stream
    raise AssertionError("unreachable")  # pragma: no cover


class _Target(NamedTuple):
    """Where a client connects: the URL, the TCP endpoint, the request target and ``Host``, and TLS."""

    url: str
    host: str
    port: int
    resource: str
    host_header: str
    ssl_context: ssl.SSLContext | None


async def _open_stream(
    nursery: trio.Nursery,
    target: _Target,
    extra_headers: list[tuple[bytes, bytes]],
    *,
    max_message_bytes: int,
    ping_interval: float | None,
    pong_timeout: float,
    write_timeout: float,
    connect_timeout: float,
    close_timeout: float,
) -> WebSocketMessageStream:
    """One upgrade attempt: TCP (and TLS), the handshake, the subprotocol check."""
    url, host, port, resource, host_header, ssl_context = target
    stream: WebSocketMessageStream | None = None
    with trio.move_on_after(connect_timeout):
        try:
            plain = await trio.open_tcp_stream(host, port)
        except OSError as exc:
            raise ConnectionClosed(f"could not connect to {url}", detail=str(exc) or None) from None
        tcp: trio.SocketStream | trio.SSLStream[trio.SocketStream] = plain
        try:
            if ssl_context is not None:
                tcp = trio.SSLStream(plain, ssl_context, server_hostname=host, https_compatible=True)
                try:
                    await tcp.do_handshake()
                except (trio.BrokenResourceError, OSError) as exc:
                    raise ConnectionClosed(f"TLS handshake with {url} failed", detail=str(exc) or None) from None
            guard = ReaderGuard(nursery, tcp)
            websocket: WebSocketConnection | None = None
            with guard.watch(trio.CancelScope()):
                websocket = await trio_websocket.wrap_client_stream(
                    guard.as_nursery(),
                    tcp,
                    host_header,
                    resource,
                    subprotocols=[SUBPROTOCOL],
                    extra_headers=extra_headers,
                    max_message_size=max_message_bytes,
                )
            if websocket is None:
                error = guard.error
                if isinstance(error, trio_websocket.ConnectionRejected):
                    raise WebSocketRejected(error.status_code, error.body, error.headers)
                raise ConnectionClosed(
                    f"{url} closed the connection during the WebSocket upgrade",
                    detail=repr(error) if error is not None else None,
                )
            stream = WebSocketMessageStream(
                websocket,
                tcp,
                guard,
                ping_interval=ping_interval,
                pong_timeout=pong_timeout,
                write_timeout=write_timeout,
                close_timeout=close_timeout,
            )
            if websocket.subprotocol != SUBPROTOCOL:
                await stream.close(CLOSE_NORMAL, "the mcp subprotocol is required")
                raise ConnectionClosed(
                    f"{url} did not select the {SUBPROTOCOL!r} subprotocol",
                    detail=f"it chose {websocket.subprotocol!r}",
                )
        except BaseException:
            with trio.CancelScope(shield=True):
                await close_quietly(tcp)
            raise
    if stream is None:
        raise ConnectionClosed(f"could not open a WebSocket to {url} within {connect_timeout:g} s")
    nursery.start_soon(stream.keepalive)
    return stream
