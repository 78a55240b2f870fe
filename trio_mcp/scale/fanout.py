"""Change notifications for the clients of every worker and machine, through Redis pub/sub.

Each process serves its own clients, so without a fan-out ``Server.notify_resource_updated`` and
``notify_list_changed`` reach only the clients of the process that calls them. While a ``RedisFanout`` runs, they
(and ``RedisFanout.resource_updated`` / ``list_changed``) notify this process's clients at once and publish the
change; every other process running a ``RedisFanout`` on the same channel notifies its own. Each change is named alike in every process (``notified_change``): a roaming session,
which several processes may serve, is told of it once, by the first of them to claim it, and the event is kept in
the event store for a client that resumes its GET stream elsewhere. A process skips what it published itself
(each fan-out has a random origin id). Delivery to other processes is at most once (pub/sub): a process
reconnecting to Redis misses what was published meanwhile.
"""

from __future__ import annotations

import functools
import json
import logging
import secrets
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Final

import trio

from .._util import collapse_exception_groups
from ..server import Server
from ..transports._base import notified_change
from .pubsub import follow
from .redis import RedisClient, RedisUnavailable

__all__ = ["RedisFanout"]

logger = logging.getLogger("trio_mcp.scale")

#: The most announced changes waiting for Redis; past it, more are dropped (and logged).
_BACKLOG: Final = 1024
_WHAT: Final = "change fan-out"


class RedisFanout:
    """Fans change notifications out to every process serving ``server`` with the same ``channel``.

    Run ``await nursery.start(fanout.run)`` (for instance in the server's lifespan): then
    ``server.notify_resource_updated`` and ``notify_list_changed`` reach every process (published in the
    background; an outage is logged). ``await fanout.resource_updated(uri)`` and ``await fanout.list_changed(kind)``
    do the same and raise when Redis cannot take the change.
    """

    def __init__(self, server: Server, redis: RedisClient, *, channel: str = "trio_mcp:changes") -> None:
        if not channel:
            raise ValueError("channel must be a non-empty string")
        self.server = server
        self.redis = redis
        self.channel = channel
        self._origin = secrets.token_hex(8)
        self._changes = 0
        self._announced: trio.MemorySendChannel[dict[str, str]] | None = None

    async def resource_updated(self, uri: str) -> None:
        """Notify the subscribers of ``uri`` here now, and in every other process through Redis.

        Raises ``RedisUnavailable`` when Redis cannot take the message (this process's subscribers were told).
        """
        change = self._next_change()
        with _telling(change):
            self.server.notify_resource_updated(uri)
        await self._publish({"uri": uri, "change": change})

    async def list_changed(self, kind: str) -> None:
        """Tell every process's clients that the ``kind`` list (tools, prompts or resources) changed: for an
        application whose processes read the list from one shared source and have each updated it.

        Raises ``RedisUnavailable`` when Redis cannot take the message (this process's clients were told).
        """
        change = self._next_change()
        with _telling(change):
            self.server.notify_list_changed(kind)
        await self._publish({"list": kind, "change": change})

    def _next_change(self) -> str:
        self._changes += 1
        return f"{self._origin}.{self._changes}"

    async def _publish(self, change: dict[str, str]) -> None:
        message = json.dumps({"origin": self._origin, **change}, separators=(",", ":"))
        await self.redis.execute("PUBLISH", self.channel, message, idempotent=False)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Deliver what other processes publish and publish what the server announces, until cancelled;
        ``task_status.started()`` once subscribed.

        A Redis outage is logged and the subscription retried with a growing pause (at most 5 s); it never ends
        this task. The first subscription must succeed, or this raises ``RedisUnavailable``.
        """
        send, receive = trio.open_memory_channel[dict[str, str]](_BACKLOG)
        try:
            with collapse_exception_groups():
                await self._run(send, receive, task_status)
        finally:
            if self.server.fan_out == self._announce:
                self.server.fan_out = None
            self._announced = None

    async def _run(
        self,
        send: trio.MemorySendChannel[dict[str, str]],
        receive: trio.MemoryReceiveChannel[dict[str, str]],
        task_status: trio.TaskStatus[None],
    ) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(functools.partial(follow, self.redis, self.channel, self._deliver, what=_WHAT))
            self._announced = send
            self.server.fan_out = self._announce
            nursery.start_soon(self._publish_announced, receive)
            task_status.started()

    def _announce(self, what: str, value: str) -> AbstractContextManager[None]:
        """``Server.fan_out``: a change the server announces is named, and published once told here. One that
        has a name already is being told by a fan-out (delivered from another process, or published by one)."""
        if notified_change.get() is not None:
            return nullcontext()
        return self._telling_then_publishing(what, value)

    @contextmanager
    def _telling_then_publishing(self, what: str, value: str) -> Iterator[None]:
        change = self._next_change()
        with _telling(change):
            yield
        try:
            if self._announced is not None:
                self._announced.send_nowait({what: value, "change": change})
        except trio.WouldBlock:
            logger.warning("a change was not passed on to the other processes: %d are waiting for Redis", _BACKLOG)

    async def _publish_announced(self, announced: trio.MemoryReceiveChannel[dict[str, str]]) -> None:
        async for change in announced:
            try:
                await self._publish(change)
            except RedisUnavailable as exc:
                logger.warning("a change was not passed on to the other processes: %s", exc)

    async def _deliver(self, data: bytes) -> None:
        try:
            message = json.loads(data)
            origin = message["origin"]
        except (ValueError, TypeError, KeyError):
            logger.warning("ignored a malformed message on %s", self.channel)
            return
        if origin == self._origin:
            return
        uri, kind, change = message.get("uri"), message.get("list"), message.get("change")
        with _telling(change if isinstance(change, str) else None):
            if isinstance(uri, str):
                self.server.notify_resource_updated(uri)
            elif kind in ("tools", "prompts", "resources"):
                self.server.notify_list_changed(kind)


@contextmanager
def _telling(change: str | None) -> Iterator[None]:
    """The notifications queued meanwhile tell of ``change``."""
    told = notified_change.set(change)
    try:
        yield
    finally:
        notified_change.reset(told)
