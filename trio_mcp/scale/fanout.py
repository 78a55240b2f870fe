"""Change notifications for the clients of every worker and machine, through Redis pub/sub.

Each process serves its own clients, so ``Server.notify_resource_updated`` and ``notify_list_changed`` reach only
the clients of the process that calls them. ``RedisFanout.resource_updated`` (and ``list_changed``) notifies this
process's clients at once and publishes the change; every other process running a ``RedisFanout`` on the same
channel notifies its own. Each change is named alike in every process (``notified_change``): a roaming session,
which several processes may serve, is told of it once, by the first of them to claim it, and the event is kept in
the event store for a client that resumes its GET stream elsewhere. A process skips what it published itself
(each fan-out has a random origin id). Delivery to other processes is at most once (pub/sub): a process
reconnecting to Redis misses what was published meanwhile.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import trio

from ..server import Server
from ..transports._base import notified_change
from .pubsub import follow
from .redis import RedisClient

__all__ = ["RedisFanout"]

logger = logging.getLogger("trio_mcp.scale")


class RedisFanout:
    """Fans change notifications out to every process serving ``server`` with the same ``channel``.

    Run ``await nursery.start(fanout.run)`` (for instance in the server's lifespan), then call
    ``await fanout.resource_updated(uri)`` where a single process would call ``server.notify_resource_updated``,
    and ``await fanout.list_changed(kind)`` for ``server.notify_list_changed``.
    """

    def __init__(self, server: Server, redis: RedisClient, *, channel: str = "trio_mcp:changes") -> None:
        if not channel:
            raise ValueError("channel must be a non-empty string")
        self.server = server
        self.redis = redis
        self.channel = channel
        self._origin = secrets.token_hex(8)
        self._changes = 0

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
        """Deliver what other processes publish, until cancelled; ``task_status.started()`` once subscribed.

        A Redis outage is logged and the subscription retried with a growing pause (at most 5 s); it never ends
        this task. The first subscription must succeed, or this raises ``RedisUnavailable``.
        """
        await follow(self.redis, self.channel, self._deliver, what="change fan-out", task_status=task_status)

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
