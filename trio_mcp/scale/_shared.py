"""What ``--redis URL`` turns on for a server process (a worker, or ``trio-mcp run`` itself): sessions that roam
between processes, the events they resume from and task records, all kept in one Redis, and the changes the
server announces (``notify_resource_updated``, ``notify_list_changed``) spread to every process.

Only what the options leave at its default is replaced: a store or directory the application chose stays.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NoReturn

import attrs
import trio

from ..server import MemoryTaskStore, Server
from ..transports.streamable_http import HttpTransportOptions, MemoryEventStore
from .event_store import RedisEventStore
from .fanout import RedisFanout
from .redis import RedisClient, RedisUnavailable
from .sessions import RedisSessionDirectory
from .task_store import RedisTaskStore

__all__ = ["shared_through_redis"]

logger = logging.getLogger("trio_mcp.scale")


@asynccontextmanager
async def shared_through_redis(
    server: Server, options: HttpTransportOptions, url: str
) -> AsyncIterator[HttpTransportOptions]:
    """``options`` with a Redis session directory and event store, ``server``'s tasks recorded in Redis and its
    changes fanned out, for as long as the block runs (the connection pool is closed after it)."""
    async with RedisClient(url) as redis, trio.open_nursery() as nursery:
        if options.sessions and options.session_directory is None:
            options = attrs.evolve(options, session_directory=RedisSessionDirectory(redis))
        if isinstance(options.event_store, MemoryEventStore):
            options = attrs.evolve(options, event_store=RedisEventStore(redis))
        if isinstance(server.tasks.store, MemoryTaskStore):
            server.tasks.store = RedisTaskStore(redis)
        nursery.start_soon(_fan_out, RedisFanout(server, redis))
        yield options
        nursery.cancel_scope.cancel()


async def _fan_out(fanout: RedisFanout) -> NoReturn:
    """The change fan-out, waiting for Redis if it is down at the start (it rides out later outages itself)."""
    while True:
        try:
            await fanout.run()
        except RedisUnavailable as exc:
            logger.warning("change fan-out waits for Redis: %s", exc)
        await trio.sleep(1.0)
