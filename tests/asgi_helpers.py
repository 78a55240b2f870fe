"""A real Hypercorn trio worker on 127.0.0.1 for the tests of ``trio_mcp.asgi``."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

hypercorn_trio = pytest.importorskip("hypercorn.trio", reason="Hypercorn is a test dependency: pip install hypercorn")
from hypercorn.config import Config  # noqa: E402


@asynccontextmanager
async def hypercorn(app: Any) -> AsyncIterator[str]:
    """Serve ``app`` with Hypercorn's trio worker on 127.0.0.1; yields its base URL, then shuts it down
    gracefully (the ASGI lifespan's shutdown included)."""
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.graceful_timeout = 1
    config.accesslog = None
    stop = trio.Event()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(
                functools.partial(hypercorn_trio.serve, app, config, shutdown_trigger=stop.wait)
            )
            yield binds[0]
            stop.set()
