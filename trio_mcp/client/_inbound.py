"""What the server sends the client: its requests (answered by the registered callbacks) and notifications
(logs, list and resource changes, handed to the callbacks and to ``listen()`` subscriptions)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

from .._core.lifecycle import Lifecycle
from .._custom import CustomMethods
from .._middleware import Middleware, RequestInfo, run_middleware
from .._session import InboundRequest
from .._wire.convert import from_wire
from ..errors import INVALID_REQUEST, McpError, RemoteProtocolError
from ..types import META_SUBSCRIPTION_ID, LoggingMessageNotificationParams
from ._listen import ChangeNotification, Subscription

__all__ = ["ClientInbound", "InboundTarget"]

logger = logging.getLogger("trio_mcp.client")

#: Requests only a client sends: receiving one while connecting means the peer echoed ours.
_CLIENT_ONLY_METHODS: Final = frozenset({"initialize", "server/discover"})


class InboundTarget(Protocol):
    """The parts of a ``Client`` that what the server sends reaches."""

    lifecycle: Lifecycle
    on_log: Callable[[LoggingMessageNotificationParams], Any] | None
    on_resource_updated: Callable[[str], Any] | None
    on_list_changed: Callable[[str], Any] | None
    custom: CustomMethods
    middleware_chain: tuple[Middleware, ...]

    @property
    def negotiated_version(self) -> str | None: ...

    @property
    def era(self) -> str | None: ...

    @property
    def subscriptions(self) -> Mapping[Any, Subscription]: ...

    def fail_handshake(self, fault: RemoteProtocolError) -> None: ...

    async def serve_request(self, request: InboundRequest) -> Any: ...

    def note_task_status(self, params: dict[str, Any] | None) -> None: ...

    def note_change(self, change: ChangeNotification) -> None: ...


def _change_of(method: str, params: dict[str, Any] | None) -> ChangeNotification | None:
    if method == "notifications/resources/updated":
        uri = params.get("uri") if params else None
        return ChangeNotification("resource", uri) if isinstance(uri, str) else None
    kind = method[len("notifications/") : -len("/list_changed")] if method.endswith("/list_changed") else None
    if kind in ("tools", "prompts", "resources"):
        return ChangeNotification(kind)  # type: ignore[arg-type]
    return None


class ClientInbound:
    """Serves what the server sends to the client (only ``ping`` until callbacks are registered)."""

    inline_methods: Final = frozenset[str]()

    def __init__(self, client: InboundTarget) -> None:
        self._client = client

    async def handle_request(self, request: InboundRequest) -> Any:
        chain = self._client.middleware_chain
        if not chain:
            return await self._request(request)
        call = RequestInfo(request.method, request.params, request.id, None, self._client.negotiated_version)
        return await run_middleware(chain, call, lambda: self._request(request))

    async def handle_notification(self, method: str, params: dict[str, Any] | None) -> None:
        chain = self._client.middleware_chain
        if not chain:
            return await self._notification(method, params)
        call = RequestInfo(method, params, None, None, self._client.negotiated_version)
        await run_middleware(chain, call, lambda: self._notification(method, params))

    async def _request(self, request: InboundRequest) -> Any:
        if request.method in _CLIENT_ONLY_METHODS and self._client.era is None:
            self._client.fail_handshake(
                RemoteProtocolError(
                    f"the peer sent our own {request.method} request back instead of answering it: it echoes its "
                    "input (like `cat` or a shell), so it is not an MCP server"
                )
            )
            raise McpError(INVALID_REQUEST, f"Invalid Request: a server may not send {request.method}")
        refusal = self._client.lifecycle.server_request_refusal(request.method)
        if refusal is not None:
            raise McpError(INVALID_REQUEST, f"Invalid Request: {refusal}")
        if request.method == "ping":
            return {}
        return await self._client.serve_request(request)

    async def _notification(self, method: str, params: dict[str, Any] | None) -> None:
        client = self._client
        custom = client.custom.notifications.get(method)
        if custom is not None:
            await custom(params)
            return
        result: Any = None
        change = _change_of(method, params)
        meta = params.get("_meta") if params else None
        subscription_id = meta.get(META_SUBSCRIPTION_ID) if type(meta) is dict else None
        if method == "notifications/tasks/status":
            client.note_task_status(params)
            return
        if method == "notifications/subscriptions/acknowledged":
            subscription = client.subscriptions.get(subscription_id)
            if subscription is not None and params is not None:
                subscription.honoured = params.get("notifications")
                subscription.acknowledged.set()
            return
        if change is not None:
            client.note_change(change)
            if subscription_id is not None:
                targets = [client.subscriptions[subscription_id]] if subscription_id in client.subscriptions else []
            else:
                targets = [s for key, s in client.subscriptions.items() if s.request_id is None]
            for subscription in targets:
                if subscription.wants(change):
                    subscription.deliver(change)
        if method == "notifications/message":
            if client.on_log is not None:
                result = client.on_log(from_wire(params, LoggingMessageNotificationParams))
            elif params is not None:
                logger.info("server log (%s): %s", params.get("level"), params.get("data"))
        elif method == "notifications/resources/updated":
            uri = params.get("uri") if params else None
            if client.on_resource_updated is not None and isinstance(uri, str):
                result = client.on_resource_updated(uri)
        elif method.startswith("notifications/") and method.endswith("/list_changed"):
            kind = method[len("notifications/") : -len("/list_changed")]
            if client.on_list_changed is not None and kind in ("tools", "resources", "prompts"):
                result = client.on_list_changed(kind)
        if inspect.isawaitable(result):
            await result
