"""The user-agent step for command-line apps: open the browser, receive the code on a loopback redirect.

RFC 8252 §7.3: the redirect URI is ``http://127.0.0.1:<port>/callback`` on a port chosen at random when the
listener opens; authorization servers accept any port for loopback URIs. The listener answers one callback
whose ``state`` matches the pending request (others get 400), and the wait is bounded.
"""

from __future__ import annotations

import logging
import webbrowser
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from urllib.parse import parse_qs, urlsplit

import trio

from ..transports._client.h11client import HttpClient
from ..transports._h11server import HttpRequest, HttpResponse, serve_http
from ._errors import OAuthError

__all__ = ["LoopbackRedirect", "loopback_authorization"]

logger = logging.getLogger("trio_mcp.auth")

_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>Authorized</title>"
    b"<p>Authorization finished. You can close this window.</p>"
)


class LoopbackRedirect:
    """A listener on 127.0.0.1 that receives the authorization redirect; see ``loopback_authorization``."""

    def __init__(self, port: int, open_browser: Callable[[str], object], timeout: float) -> None:
        self.redirect_uri = f"http://127.0.0.1:{port}/callback"
        self._open_browser = open_browser
        self._timeout = timeout
        self._pending: tuple[str, trio.MemorySendChannel[str]] | None = None

    async def authorize(self, http: HttpClient, authorization_url: str, redirect_uri: str) -> str:
        """The ``authorization_handler`` of ``OAuthClientProvider``: open ``authorization_url`` in the browser
        and return the URL the browser was redirected to."""
        state = parse_qs(urlsplit(authorization_url).query).get("state", [""])[0]
        if not state:
            raise OAuthError("the authorization request carries no state")
        send, receive = trio.open_memory_channel[str](1)
        self._pending = (state, send)
        try:
            await trio.to_thread.run_sync(self._open_browser, authorization_url)
            with trio.move_on_after(self._timeout):
                return await receive.receive()
            raise OAuthError(f"no authorization answer arrived within {self._timeout:.0f} s")
        finally:
            self._pending = None

    async def handle(self, request: HttpRequest, response: HttpResponse) -> None:
        if request.method != "GET" or request.path != "/callback":
            await response.send(404, (("content-type", "text/plain"),), b"not found\n")
            return
        state = request.query_params.get("state", [""])[0]
        pending = self._pending
        if pending is None or state != pending[0]:
            logger.warning("a loopback callback arrived with no matching authorization request")
            await response.send(400, (("content-type", "text/plain"),), b"unexpected authorization callback\n")
            return
        await response.send(200, (("content-type", "text/html; charset=utf-8"), ("cache-control", "no-store")), _PAGE)
        try:
            pending[1].send_nowait(f"{self.redirect_uri}?{request.query}")
        except trio.WouldBlock:
            pass  # a second callback for the same request: the first one counts


@asynccontextmanager
async def loopback_authorization(
    *, open_browser: Callable[[str], object] = webbrowser.open, timeout: float = 300.0
) -> AsyncIterator[LoopbackRedirect]:
    """A loopback redirect listener for as long as the block runs::

        async with loopback_authorization() as loopback:
            provider = OAuthClientProvider(redirect_uri=loopback.redirect_uri,
                                           authorization_handler=loopback.authorize)
            async with open_http_client(url, auth=provider) as client: ...

    ``open_browser`` is called (in a thread) with the authorization URL; ``timeout`` bounds the wait for the
    user to finish.
    """
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    async with trio.open_nursery() as nursery:
        holder: list[LoopbackRedirect] = []

        async def handle(request: HttpRequest, response: HttpResponse) -> None:
            await holder[0].handle(request, response)

        listeners = await nursery.start(serve_http, handle, "127.0.0.1", 0)
        holder.append(LoopbackRedirect(listeners[0].socket.getsockname()[1], open_browser, timeout))
        try:
            yield holder[0]
        finally:
            nursery.cancel_scope.cancel()
