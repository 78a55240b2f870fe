"""Helpers for testing servers and embedding them in-process: a real client wired to a real server in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

from ._util import collapse_exception_groups
from .client import Client
from .server import Server
from .transports import memory_stream_pair

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .client import ClientOptions

__all__ = ["open_in_memory"]


@asynccontextmanager
async def open_in_memory(server: Server, **client_options: Unpack[ClientOptions]) -> AsyncIterator[Client]:
    """Serve ``server`` to an initialized ``Client`` over an in-memory pair, inside the server's lifespan.

    Messages are serialised on the way through, so this exercises the same codec and engine as a real
    transport, without processes or sockets.
    """
    with collapse_exception_groups():
        async with server.running(), trio.open_nursery() as nursery:
            client_end, server_end = memory_stream_pair()
            await nursery.start(server.serve_connection, server_end)
            client = Client(client_end, **client_options)
            await client.start(nursery)
            try:
                yield client
            finally:
                await client.aclose()
                nursery.cancel_scope.cancel()
