"""Clients for servers started as subprocesses and spoken to over stdio."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import trio

from .._util import collapse_exception_groups
from ..transports.stdio import StderrMode, StdioProcess, check_stdio_options
from ._client import Client
from ._options import ClientOptions, check_client_options

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["open_stdio_client", "connect_stdio_client"]


async def connect_stdio_client(
    nursery: trio.Nursery,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: StderrMode = "forward",
    **client_options: Unpack[ClientOptions],
) -> Client:
    """Start ``command`` and return an initialized ``Client`` whose tasks live in ``nursery``.

    For applications whose lifetimes are not nested; call ``await client.aclose()`` when done, which
    also shuts the process down (stdin closed, then SIGTERM, then SIGKILL).
    """
    check_client_options(client_options)
    process = await StdioProcess.start(nursery, command, env=env, cwd=cwd, stderr=stderr)
    client = Client(process.stream, **client_options)
    client.add_close_callback(lambda: process.aclose(urgent=client.aborting))
    await client.start(nursery)
    return client


@asynccontextmanager
async def open_stdio_client(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: StderrMode = "forward",
    **client_options: Unpack[ClientOptions],
) -> AsyncIterator[Client]:
    """Start ``command`` as an MCP server and yield an initialized ``Client`` for it.

    Leaving the block closes the client and shuts the server process down, whatever happened inside.
    ``client_options`` go to ``Client`` (``client_info``, ``protocol_version``, ``request_timeout``).
    """
    check_client_options(client_options)
    check_stdio_options(command, env=env, cwd=cwd, stderr=stderr)
    with collapse_exception_groups():
        async with trio.open_nursery() as nursery:
            client = await connect_stdio_client(nursery, command, env=env, cwd=cwd, stderr=stderr, **client_options)
            try:
                yield client
            finally:
                await client.aclose()
