"""Redis publish/subscribe on trio: a subscription on its own connection that survives Redis restarts.

Pub/sub delivers at most once: a message published while a subscriber is reconnecting is not seen by it.
What is sent through it here (change notifications) tolerates that; what must not be lost goes to a stream.
A connection that goes quiet is probed with ``PING`` every ``health_interval`` seconds and replaced when the
probe gets no answer, so a silently dead server (no FIN, say after a network partition) is noticed too.
"""

from __future__ import annotations

import collections
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

import trio

from ._connection import READ_SIZE, Connection, Failed
from ._resp import RespProtocolError, encode_commands
from .redis import RedisClient, RedisUnavailable

__all__ = ["Subscription", "follow", "subscribe"]

logger = logging.getLogger("trio_mcp.scale")

#: The longest pause between attempts to subscribe again after an outage.
_MAX_PAUSE: Final = 5.0


class Subscription:
    """Messages of the subscribed channels, as ``(channel, data)``: ``async for channel, data in subscription``.

    Reconnects and subscribes again after a failure, up to the client's ``retries`` times in a row; then the
    iteration raises ``RedisUnavailable``. ``on_join`` is awaited after every subscription, the first included:
    what was published while it was away is lost, and the subscriber may want to catch up otherwise.
    """

    def __init__(
        self,
        client: RedisClient,
        channels: tuple[str, ...],
        health_interval: float,
        on_join: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._client = client
        self._channels = channels
        self._health_interval = health_interval
        self._on_join = on_join
        self._connection: Connection | None = None
        self._messages: collections.deque[tuple[str, bytes]] = collections.deque()

    async def _open(self) -> None:
        """Connect and subscribe, retrying with backoff; raises ``RedisUnavailable`` when out of retries."""
        client = self._client
        for attempt in range(client.retries + 1):
            if attempt:
                await trio.sleep(client.retry_backoff * 2 ** (attempt - 1))
            connection: Connection | None = None
            try:
                connection = await client.open_dedicated_connection()
                with trio.fail_after(client.command_timeout):
                    await connection.stream.send_all(encode_commands([["SUBSCRIBE", *self._channels]]))
                    confirmed = 0
                    while confirmed < len(self._channels):
                        reply = await self._read(connection)
                        confirmed += isinstance(reply, list) and reply[:1] == [b"subscribe"]
                self._connection = connection
                break
            except (Failed, OSError, trio.BrokenResourceError, trio.TooSlowError, RespProtocolError) as exc:
                failure = exc
                if connection is not None:
                    await trio.aclose_forcefully(connection.stream)
        else:
            raise RedisUnavailable(
                f"Redis at {client.host}:{client.port}: cannot subscribe ({failure})", maybe_applied=False
            ) from None
        if self._on_join is not None:
            await self._on_join()

    @staticmethod
    async def _read(connection: Connection) -> Any:
        while True:
            complete, reply = connection.reader.next_reply()
            if complete:
                return reply
            data = await connection.stream.receive_some(READ_SIZE)
            if not data:
                raise Failed("Redis closed the connection", sent=True)
            connection.reader.feed(data)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> tuple[str, bytes]:
        while not self._messages:
            if self._connection is None:
                await self._open()
            assert self._connection is not None
            try:
                await self._receive(self._connection)
            except (
                Failed,
                OSError,
                trio.BrokenResourceError,
                trio.ClosedResourceError,
                trio.TooSlowError,
                RespProtocolError,
            ):
                await trio.aclose_forcefully(self._connection.stream)
                self._connection = None
        return self._messages.popleft()

    async def _receive(self, connection: Connection) -> None:
        """Wait for the next message; after ``health_interval`` quiet seconds, a PING must be answered in time."""
        with trio.move_on_after(self._health_interval) as quiet:
            reply = await self._read(connection)
        if quiet.cancelled_caught:
            await connection.stream.send_all(encode_commands([["PING"]]))
            with trio.fail_after(self._client.command_timeout):
                reply = await self._read(connection)
        if isinstance(reply, list) and len(reply) == 3 and reply[0] == b"message":
            self._messages.append((reply[1].decode("utf-8", "replace"), reply[2]))

    async def aclose(self) -> None:
        """Close the connection; ``subscribe`` does this on exit."""
        if self._connection is not None:
            await trio.aclose_forcefully(self._connection.stream)
            self._connection = None


@asynccontextmanager
async def subscribe(
    client: RedisClient,
    *channels: str,
    health_interval: float = 15.0,
    on_join: Callable[[], Awaitable[None]] | None = None,
) -> AsyncIterator[Subscription]:
    """Subscribe to ``channels``; the subscription is active when this is entered (raises ``RedisUnavailable``
    if Redis cannot be reached within the client's retries). Closed on exit. ``on_join``: see ``Subscription``."""
    if not channels:
        raise ValueError("subscribe needs at least one channel")
    if (
        isinstance(health_interval, bool)
        or not isinstance(health_interval, (int, float))
        or not (health_interval > 0 and math.isfinite(health_interval))
    ):
        raise ValueError(f"health_interval must be a positive number of seconds, not {health_interval!r}")
    subscription = Subscription(client, channels, float(health_interval), on_join)
    await subscription._open()
    try:
        yield subscription
    finally:
        await subscription.aclose()


async def follow(
    client: RedisClient,
    channel: str,
    deliver: Callable[[bytes], Awaitable[None]],
    *,
    what: str,
    on_join: Callable[[], Awaitable[None]] | None = None,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Hand every message of ``channel`` to ``deliver`` until cancelled; ``task_status.started()`` once subscribed,
    ``on_join`` after every subscription (see ``Subscription``).

    An outage is logged (naming ``what`` pauses) and the subscription retried with a growing pause (at most 5 s);
    it never ends this task. The first subscription must succeed, or this raises ``RedisUnavailable``.
    """
    started = False
    pause = client.retry_backoff
    while True:
        try:
            async with subscribe(client, channel, on_join=on_join) as messages:
                if not started:
                    started = True
                    task_status.started()
                pause = client.retry_backoff
                async for _, data in messages:
                    await deliver(data)
        except RedisUnavailable as exc:
            if not started:
                raise
            logger.warning("%s paused: %s; retrying in %g s", what, exc, pause)
        await trio.sleep(pause)
        pause = min(_MAX_PAUSE, pause * 2)
