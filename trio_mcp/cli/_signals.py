"""Ctrl-C as a trio user expects it: SIGINT cancels the command's scope, so everything unwinds through its
``finally`` blocks (a pending call is cancelled on the server, a subprocess is shut down) and the command exits
130 with no traceback."""

from __future__ import annotations

import signal
from typing import Awaitable, Callable

import trio

from ._exit import INTERRUPTED

__all__ = ["until_interrupted"]


async def until_interrupted(command: Callable[[], Awaitable[int]]) -> int:
    """Run ``command``; on SIGINT cancel it and return 130, else return its status."""
    interrupted = False

    async def watch(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        nonlocal interrupted
        with trio.open_signal_receiver(signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                interrupted = True
                nursery.cancel_scope.cancel()
                return

    status = INTERRUPTED
    async with trio.open_nursery() as nursery:
        await nursery.start(watch)
        status = await command()
        nursery.cancel_scope.cancel()
    return INTERRUPTED if interrupted else status
