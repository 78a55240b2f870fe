"""Streamable HTTP for 2026-07-28, client side: one self-contained POST per request, with the standard request
headers (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``); cancelling a request closes its
response, which is how HTTP cancels in that revision."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._core.jsonrpc import RequestId, encode, is_request_id
from ..._core.mcp_headers import NAMED_METHODS, encode_header_value
from ..._core.sse import SSEDecoder
from ..._wire.methods import METHODS
from ..._wire.versions import LATEST_VERSION
from ...errors import ConnectionClosed
from .._base import connection_lost
from .common import (
    DEFAULT_TIMEOUTS,
    JSON_TYPE,
    META_VERSION,
    SSE_TYPE,
    Call,
    HeaderPathsFor,
    HttpAuth,
    HttpMessageStream,
    logger,
    media_type,
)
from .h11client import HttpClient, HttpError, HttpTimeouts

__all__ = ["StatelessHttpStream"]


class StatelessHttpStream(HttpMessageStream):
    """Streamable HTTP for 2026-07-28, as a ``MessageStream``: one self-contained POST per request.

    Requests must carry their ``_meta`` (the client layer adds it). The engine's ``notifications/cancelled``
    closes the request's response instead of being sent, which is what cancellation is on HTTP now; other MCP
    notifications are dropped, an extension's (a method MCP does not define) is POSTed on its own, and responses
    have no meaning here and are dropped.
    """

    def __init__(
        self,
        url: str,
        *,
        http: HttpClient | None = None,
        headers: Mapping[str, str] | None = None,
        timeouts: HttpTimeouts = DEFAULT_TIMEOUTS,
        header_paths_for: HeaderPathsFor | None = None,
        protocol_version: str = LATEST_VERSION,
        connect_attempts: int = 3,
        auth: HttpAuth | None = None,
    ) -> None:
        """Args:
        url, http, headers, timeouts, connect_attempts, auth: as for ``StreamableHttpSessionStream``.
        header_paths_for: the ``x-mcp-header`` paths of a tool, for the ``Mcp-Param-*`` headers of tools/call.
        protocol_version: the ``MCP-Protocol-Version`` for a request whose ``_meta`` names none.
        """
        super().__init__(
            url, http=http, headers=headers, timeouts=timeouts, connect_attempts=connect_attempts, auth=auth
        )
        self.header_paths_for = header_paths_for
        self.protocol_version = protocol_version
        self._calls: dict[RequestId, Call] = {}

    def request_headers(self, message: Mapping[str, Any]) -> list[tuple[str, str]]:
        """The headers of the POST that carries the request ``message`` (the standard MCP request headers)."""
        method = str(message.get("method"))
        params = message.get("params")
        params = params if isinstance(params, Mapping) else {}
        meta = params.get("_meta")
        version = meta.get(META_VERSION) if isinstance(meta, Mapping) else None
        headers = dict(self.headers)
        headers["accept"] = f"{JSON_TYPE}, {SSE_TYPE}"
        headers["content-type"] = JSON_TYPE
        headers["mcp-protocol-version"] = version if isinstance(version, str) else self.protocol_version
        headers["mcp-method"] = method
        field = NAMED_METHODS.get(method)
        if field is not None and isinstance(params.get(field), str):
            headers["mcp-name"] = encode_header_value(params[field])
        name = params.get("name")
        if method == "tools/call" and self.header_paths_for is not None and isinstance(name, str):
            arguments = params.get("arguments")
            for header, path in (self.header_paths_for(name) or {}).items():
                value: Any = arguments
                for key in path:
                    value = value.get(key) if isinstance(value, Mapping) else None
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                if value is None:
                    continue  # null or absent: the header is left out
                if not isinstance(value, (str, int, bool)):
                    logger.warning(
                        "tool %r: argument for Mcp-Param-%s is a %s, not a scalar; header left out",
                        name,
                        header,
                        type(value).__name__,
                    )
                    continue
                headers[f"mcp-param-{header.lower()}"] = encode_header_value(value)
        return list(headers.items())

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        """POST a request (answered through ``receive()``); a cancellation closes that request's stream."""
        self._check_open()
        if type(message) is not dict:
            logger.warning("dropping a JSON-RPC batch: 2026-07-28 has none")
            return
        method = message.get("method")
        if isinstance(method, str) and "id" in message and is_request_id(message["id"]):
            call = Call({message["id"]: method})
            self._calls[message["id"]] = call
            self._spawn(self._run_request, call, encode(message), self.request_headers(message))
        elif method == "notifications/cancelled":
            params = message.get("params")
            request_id = params.get("requestId") if type(params) is dict else None
            cancelled = self._calls.pop(request_id, None) if is_request_id(request_id) else None
            if cancelled is not None:
                cancelled.pending.clear()
                cancelled.scope.cancel()  # closing the response stream is the cancellation
        elif method in METHODS:
            logger.debug("dropping %s: no MCP notification is defined over stateless HTTP", method)
        elif isinstance(method, str):
            await self._post_notification(method, message)
        else:
            logger.warning("dropping a response: a 2026-07-28 server sends no requests")

    async def _post_notification(self, method: str, message: dict[str, Any]) -> None:
        """POST an extension's notification on its own; the server answers 202."""
        try:
            response = await self._http("POST", self.url, self.request_headers(message), encode(message))
        except HttpError as exc:
            logger.warning("could not send %s: %s", method, exc)
            return
        await response.aclose()
        if response.status != 202:
            logger.warning("the server answered %s with HTTP %d instead of 202", method, response.status)

    def _forget(self, request_id: RequestId, call: Call) -> None:
        if self._calls.get(request_id) is call:
            del self._calls[request_id]

    async def _run_request(self, call: Call, body: bytes, headers: list[tuple[str, str]]) -> None:
        with call.scope:
            try:
                try:
                    response = await self._http("POST", self.url, headers, body)
                except ConnectionClosed:
                    return
                except HttpError as exc:
                    detail = f"the POST failed: {exc}"
                    await self._fail(call, lambda rid, method: connection_lost(rid, method, detail))
                    return
                content_type = media_type(response)
                if response.status == 200 and content_type == SSE_TYPE:
                    problem = await self._pump(response, SSEDecoder(), call)
                    detail = (
                        f"unreadable SSE stream: {problem}"
                        if problem
                        else "the server ended the SSE stream before the response; a stateless request cannot "
                        "be resumed, re-issue it with a new id"
                    )
                    await self._fail(call, lambda rid, method: connection_lost(rid, method, detail))
                elif response.status == 200 and content_type == JSON_TYPE:
                    await self._read_json(call, response)
                else:
                    await self._fail_with_status(call, response, modern_bodies=True)
            finally:
                for request_id in list(call.pending):
                    self._forget(request_id, call)
