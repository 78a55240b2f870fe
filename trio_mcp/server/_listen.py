"""The open ``subscriptions/listen`` requests of one connection (2026-07-28): which change each one hears, and
what is held while its acknowledgement is being written."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._core.jsonrpc import RequestId
from ..types import META_SUBSCRIPTION_ID, SubscriptionFilter

__all__ = ["Listener", "ListenStreams"]

#: A notification to queue on a listen request's stream: its method, its params, and that request's id.
Told = tuple[str, dict[str, Any], RequestId]


class Listener:
    """One open ``subscriptions/listen`` request and the filter the server honours for it."""

    __slots__ = ("request_id", "filter", "resources", "task_ids", "meta", "held")

    def __init__(self, request_id: RequestId, honoured: SubscriptionFilter) -> None:
        self.request_id = request_id
        self.filter = honoured
        self.resources = frozenset(honoured.resource_subscriptions or ())
        self.task_ids = frozenset(honoured.task_ids or ())
        self.meta = {META_SUBSCRIPTION_ID: request_id}
        #: What changed while the acknowledgement was being written, told right after it (None: acknowledged).
        self.held: list[tuple[str, dict[str, Any]]] | None = []

    def wants_list(self, kind: str) -> bool:
        honoured = self.filter
        return bool(
            (kind == "tools" and honoured.tools_list_changed)
            or (kind == "prompts" and honoured.prompts_list_changed)
            or (kind == "resources" and honoured.resources_list_changed)
        )


class ListenStreams:
    """A connection's listen requests, by request id. Each change yields what to queue for those whose filter asks
    for it (the connection queues it: no reference back to it, so a connection ends with no cycle to collect)."""

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: dict[RequestId, Listener] = {}

    def __len__(self) -> int:
        return len(self._open)

    @contextmanager
    def listening(self, request_id: RequestId, honoured: SubscriptionFilter) -> Iterator[Listener]:
        """Listen from before the acknowledgement is written (the client may act on it as soon as it arrives), so a
        change made meanwhile is held and told right after it by ``acknowledged``: never lost, never first."""
        listener = Listener(request_id, honoured)
        self._open[request_id] = listener
        try:
            yield listener
        finally:
            del self._open[request_id]

    @staticmethod
    def acknowledged(listener: Listener) -> Iterator[Told]:
        """What was held while ``listener``'s acknowledgement was being written; what changes next is told as it
        comes."""
        held, listener.held = listener.held or [], None
        for method, params in held:
            yield method, params, listener.request_id

    def list_changed(self, kind: str, method: str) -> Iterator[Told]:
        for listener in self._open.values():
            if listener.wants_list(kind):
                yield from _told(listener, method, {"_meta": listener.meta})

    def resource_updated(self, uri: str) -> Iterator[Told]:
        for listener in self._open.values():
            if uri in listener.resources:
                yield from _told(listener, "notifications/resources/updated", {"uri": uri, "_meta": listener.meta})

    def task_changed(self, task_id: str, params: dict[str, Any]) -> Iterator[Told]:
        for listener in self._open.values():
            if task_id in listener.task_ids:
                yield from _told(listener, "notifications/tasks", {**params, "_meta": listener.meta})


def _told(listener: Listener, method: str, params: dict[str, Any]) -> Iterator[Told]:
    """The notification to queue now, or nothing if it is held until ``listener``'s acknowledgement is written."""
    if listener.held is not None:
        listener.held.append((method, params))
    else:
        yield method, params, listener.request_id
