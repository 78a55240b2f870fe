"""What ``--redis URL`` turns on for a server process (a worker, or ``trio-mcp run`` itself): sessions that roam
between processes, the events they resume from and task records, all kept in one Redis.

Only what the options leave at its default is replaced: a store or directory the application chose stays.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import attrs

from ..server import MemoryTaskStore, Server
from ..transports.streamable_http import HttpTransportOptions, MemoryEventStore
from .event_store import RedisEventStore
from .redis import RedisClient
from .sessions import RedisSessionDirectory
from .task_store import RedisTaskStore

__all__ = ["shared_through_redis"]


@asynccontextmanager
async def shared_through_redis(
    server: Server, options: HttpTransportOptions, url: str
) -> AsyncIterator[HttpTransportOptions]:
    """``options`` with a Redis session directory and event store, and ``server``'s tasks recorded in Redis,
    for as long as the block runs (the connection pool is closed after it)."""
    async with RedisClient(url) as redis:
        if options.sessions and options.session_directory is None:
            options = attrs.evolve(options, session_directory=RedisSessionDirectory(redis))
        if isinstance(options.event_store, MemoryEventStore):
            options = attrs.evolve(options, event_store=RedisEventStore(redis))
        if isinstance(server.tasks.store, MemoryTaskStore):
            server.tasks.store = RedisTaskStore(redis)
        yield options
