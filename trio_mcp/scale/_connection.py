"""One connection to a Redis server: commands out and replies in over a trio stream, and the failure that says
whether a command had left (which decides whether it may be sent again)."""

from __future__ import annotations

import select
from typing import Any, Final

import trio

from ._resp import ReplyReader

__all__ = ["READ_SIZE", "Connection", "Failed"]

#: The most one read from a Redis connection asks for.
READ_SIZE: Final = 65536


class Failed(Exception):
    """A command failed on its connection; ``sent`` says whether it left, so whether it may have been applied."""

    def __init__(self, reason: str, *, sent: bool, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.sent = sent
        self.timed_out = timed_out


class Connection:
    """One connection to Redis (TLS or not), with hiredis reading its replies."""

    def __init__(self, stream: trio.abc.Stream, tcp: trio.SocketStream) -> None:
        self.stream = stream
        self.tcp = tcp
        self.reader = ReplyReader()

    def closed_by_peer(self) -> bool:
        """An idle connection with something to read has been closed (or garbled) by the server."""
        readable, _, _ = select.select([self.tcp.socket.fileno()], [], [], 0)
        return bool(readable)

    async def round_trip(self, payload: bytes, count: int) -> list[Any]:
        await self.stream.send_all(payload)
        replies: list[Any] = []
        while len(replies) < count:
            complete, reply = self.reader.next_reply()
            if complete:
                replies.append(reply)
                continue
            data = await self.stream.receive_some(READ_SIZE)
            if not data:
                raise Failed("Redis closed the connection", sent=True)
            self.reader.feed(data)
        return replies
