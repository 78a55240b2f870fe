"""``notifications/resources/updated`` for the subscribers of every worker and machine, through Redis pub/sub.

Each process serves its own clients, so ``Server.notify_resource_updated`` reaches only the subscribers of the
process that calls it. ``RedisFanout.resource_updated`` notifies this process's subscribers at once and
publishes the URI; every other process running a ``RedisFanout`` on the same channel notifies its own. A
process skips what it published itself (each fan-out has a random origin id). Delivery to other processes is
at most once (pub/sub): a process reconnecting to Redis misses what was published meanwhile.
"""

from __future__ import annotations

import json
import logging
import secrets

import trio

from ..server import Server
from .pubsub import follow
from .redis import RedisClient

__all__ = ["RedisFanout"]

logger = logging.getLogger("trio_mcp.scale")


class RedisFanout:
    """Fans resource-update notifications out to every process serving ``server`` with the same ``channel``.

    Run ``await nursery.start(fanout.run)`` (for instance in the server's lifespan), then call
    ``await fanout.resource_updated(uri)`` where a single process would call ``server.notify_resource_updated``.
    """

    def __init__(self, server: Server, redis: RedisClient, *, channel: str = "trio_mcp:resources-updated") -> None:
        if not channel:
            raise ValueError("channel must be a non-empty string")
        self.server = server
        self.redis = redis
        self.channel = channel
        self._origin = secrets.token_hex(8)

    async def resource_updated(self, uri: str) -> None:
        """Notify the subscribers of ``uri`` here now, and in every other process through Redis.

        Raises ``RedisUnavailable`` when Redis cannot take the message (this process's subscribers were told).
        """
        self.server.notify_resource_updated(uri)
        message = json.dumps({"origin": self._origin, "uri": uri}, separators=(",", ":"))
        await self.redis.execute("PUBLISH", self.channel, message, idempotent=False)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Deliver what other processes publish, until cancelled; ``task_status.started()`` once subscribed.

        A Redis outage is logged and the subscription retried with a growing pause (at most 5 s); it never ends
        this task. The first subscription must succeed, or this raises ``RedisUnavailable``.
        """
        await follow(self.redis, self.channel, self._deliver, what="resource-update fan-out", task_status=task_status)

    async def _deliver(self, data: bytes) -> None:
        try:
            message = json.loads(data)
            origin, uri = message["origin"], message["uri"]
        except (ValueError, TypeError, KeyError):
            logger.warning("ignored a malformed message on %s", self.channel)
            return
        if origin != self._origin and isinstance(uri, str):
            self.server.notify_resource_updated(uri)
