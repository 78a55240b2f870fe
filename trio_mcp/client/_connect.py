"""Clients over any ``MessageStream``: the ``open_client``/``connect_client`` pair."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

from .._util import collapse_exception_groups
from ..transports._base import MessageStream
from ._client import Client
from ._options import ClientOptions, check_client_options

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["open_client", "connect_client"]


async def connect_client(
    nursery: trio.Nursery, stream: MessageStream, **client_options: Unpack[ClientOptions]
) -> Client:
    """Run a ``Client`` over ``stream`` with its tasks in ``nursery``, and return it once initialized.

    For transports built by hand (an in-memory pair, a custom pipe). Call ``await client.aclose()`` when
    done; it also closes ``stream``. ``client_options`` go to ``Client``.
    """
    check_client_options(client_options)
    client = Client(stream, **client_options)
    await client.start(nursery)
    return client


@asynccontextmanager
async def open_client(stream: MessageStream, **client_options: Unpack[ClientOptions]) -> AsyncIterator[Client]:
    """Yield an initialized ``Client`` over ``stream``; leaving the block closes the client and the stream."""
    check_client_options(client_options)
    with collapse_exception_groups():
        async with trio.open_nursery() as nursery:
            client = await connect_client(nursery, stream, **client_options)
            try:
                yield client
            finally:
                await client.aclose()
