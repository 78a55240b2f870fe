"""Helpers shared by the interoperability tests (peers nobody here wrote)."""

from __future__ import annotations

from typing import Any

import trio

import trio_mcp
from trio_mcp.types import ProgressNotificationParams


async def cancel_after_first_progress(
    client: trio_mcp.Client, name: str, arguments: dict[str, Any]
) -> list[ProgressNotificationParams]:
    """Start a long, progress-reporting call and abandon it (cancel scope) once the first update arrives."""
    updates: list[ProgressNotificationParams] = []
    first = trio.Event()

    def on_progress(params: ProgressNotificationParams) -> None:
        updates.append(params)
        first.set()

    async def call() -> None:
        await client.call_tool(name, arguments, on_progress=on_progress)
        raise AssertionError(f"{name} finished although it was to be cancelled")

    with trio.move_on_after(15) as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call)
            await first.wait()
            nursery.cancel_scope.cancel()
    assert not scope.cancelled_caught, "no progress arrived before the call was to be cancelled"
    return updates
