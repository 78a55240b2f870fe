"""Middleware: functions wrapped around every inbound request and notification a peer serves.

A middleware is ``async def mw(call: RequestInfo, call_next: CallNext) -> Any``. It runs in the task serving the
request, inside the request's cancel scope: a deadline it sets bounds the handler, and the time it measures is
the handler's. It may return a result without calling ``call_next`` (a cache hit), raise ``McpError`` (it becomes
the JSON-RPC error), or look at what ``call_next()`` returned or raised. The first registered is the outermost.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ._core.jsonrpc import RequestId
from .types import META_PROTOCOL_VERSION

__all__ = ["RequestInfo", "CallNext", "Middleware", "run_middleware", "require_async"]

CallNext = Callable[[], Awaitable[Any]]
"""Runs the rest of the chain (the next middleware, then the handler) and returns the result."""

Middleware = Callable[["RequestInfo", CallNext], Awaitable[Any]]
"""``async def mw(call, call_next) -> result``: see the module docstring."""


class RequestInfo:
    """One inbound request or notification, as a middleware sees it.

    ``request_id`` is None for a notification (whose result is ignored), and for a request the client sends
    until it is written. ``principal`` is who the transport authenticated (None without auth, and always on the
    client side). ``protocol_version`` is the revision the message speaks: the request's own on 2026-07-28, the
    negotiated one in a session (None before it).
    """

    __slots__ = ("method", "params", "request_id", "principal", "is_notification", "_version")

    def __init__(
        self,
        method: str,
        params: dict[str, Any] | None,
        request_id: RequestId | None,
        principal: Any,
        protocol_version: str | None,
        *,
        notification: bool | None = None,
    ) -> None:
        self.method = method
        self.params = params
        self.request_id = request_id
        self.principal = principal
        self.is_notification = request_id is None if notification is None else notification
        self._version = protocol_version

    @property
    def meta(self) -> dict[str, Any]:
        """The message's ``_meta`` object ({} when absent)."""
        meta = self.params.get("_meta") if self.params else None
        return meta if type(meta) is dict else {}

    @property
    def protocol_version(self) -> str | None:
        version = self.meta.get(META_PROTOCOL_VERSION)
        return version if isinstance(version, str) else self._version

    def __repr__(self) -> str:
        return f"RequestInfo(method={self.method!r}, request_id={self.request_id!r})"


async def run_middleware(chain: Sequence[Middleware], call: RequestInfo, handler: CallNext) -> Any:
    """Run ``handler`` inside ``chain`` (first = outermost); each ``call_next`` may be called once."""
    if not chain:
        return await handler()
    return await chain[0](call, _Next(chain, call, handler, 0))


class _Next:
    """The ``call_next`` given to ``chain[index]``: one small object a layer, and no coroutine of its own (it
    hands back the next layer's, which the middleware awaits)."""

    __slots__ = ("_chain", "_call", "_handler", "_index", "_called")

    def __init__(self, chain: Sequence[Middleware], call: RequestInfo, handler: CallNext, index: int) -> None:
        self._chain = chain
        self._call = call
        self._handler = handler
        self._index = index
        self._called = False

    def __call__(self) -> Awaitable[Any]:
        if self._called:
            middleware = self._chain[self._index]
            raise RuntimeError(f"middleware {middleware!r} called call_next() twice for {self._call.method}")
        self._called = True
        index = self._index + 1
        if index == len(self._chain):
            return self._handler()
        return self._chain[index](self._call, _Next(self._chain, self._call, self._handler, index))


def require_async(what: str, function: Any) -> None:
    """Refuse, at registration, a hook that is not an async function (a sync one would fail on every call)."""
    while isinstance(function, functools.partial):
        function = function.func
    if not (inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(getattr(function, "__call__", None))):
        raise TypeError(f"{what} must be an async function (async def), not {function!r}")
