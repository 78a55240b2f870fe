"""One subscription API for both eras: ``async with client.listen(...) as changes``.

On 2026-07-28 it is one ``subscriptions/listen`` request whose notifications name it by ``subscriptionId``;
on the legacy revisions it is ``resources/subscribe`` for each URI plus the session's list-changed
notifications. Either way the caller reads ``ChangeNotification`` objects from it.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs
import trio

from .._core.jsonrpc import RequestId

__all__ = ["ChangeNotification", "Subscription"]

ChangeKind = Literal["tools", "prompts", "resources", "resource"]


@attrs.frozen
class ChangeNotification:
    """A change the server reported: a list changed (``tools``/``prompts``/``resources``) or one resource."""

    kind: ChangeKind
    #: The resource that changed, for ``kind == "resource"``.
    uri: str | None = None


@attrs.define(eq=False)
class Subscription:
    """The changes one ``listen()`` asked for; ``receive()`` them or ``async for`` over them.

    ``honoured`` is what the server agreed to send (on 2026-07-28 it may be less than was asked).
    ``receive()`` raises ``trio.EndOfChannel`` once the server ends the subscription.
    """

    tools: bool
    prompts: bool
    resources: bool
    resource_uris: frozenset[str]
    honoured: dict[str, Any] | None = None
    request_id: RequestId | None = None
    acknowledged: trio.Event = attrs.field(factory=trio.Event)
    _send: trio.MemorySendChannel[ChangeNotification] | None = None
    _receive: trio.MemoryReceiveChannel[ChangeNotification] | None = None
    #: Changes dropped because the reader fell more than the buffer behind.
    dropped: int = 0

    def __attrs_post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[ChangeNotification](256)

    def notifications_wanted(self) -> dict[str, Any]:
        """The ``notifications`` object of this subscription's ``subscriptions/listen`` request (2026-07-28)."""
        wanted: dict[str, Any] = {}
        for flag, key in (
            (self.tools, "toolsListChanged"),
            (self.prompts, "promptsListChanged"),
            (self.resources, "resourcesListChanged"),
        ):
            if flag:
                wanted[key] = True
        if self.resource_uris:
            wanted["resourceSubscriptions"] = sorted(self.resource_uris)
        return wanted

    def wants(self, change: ChangeNotification) -> bool:
        """Whether this subscription asked for ``change``."""
        if change.kind == "resource":
            return change.uri in self.resource_uris
        return bool(getattr(self, change.kind))

    def deliver(self, change: ChangeNotification) -> None:
        """Queue a change without blocking the session's reader (dropped, and counted, if the reader lags)."""
        assert self._send is not None
        try:
            self._send.send_nowait(change)
        except trio.WouldBlock:
            self.dropped += 1
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    def end(self) -> None:
        """No more changes will come."""
        assert self._send is not None
        self._send.close()

    async def receive(self) -> ChangeNotification:
        """The next change; raises ``trio.EndOfChannel`` when the subscription has ended."""
        assert self._receive is not None
        return await self._receive.receive()

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> ChangeNotification:
        try:
            return await self.receive()
        except trio.EndOfChannel:
            raise StopAsyncIteration from None
