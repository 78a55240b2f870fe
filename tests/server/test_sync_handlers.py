"""Sync handlers run in worker threads; when that is why one fails (an sqlite3 connection from the lifespan),
the logged failure says so and what to do."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio

from trio_mcp import Context, Server
from trio_mcp.testing import open_in_memory
from trio_mcp.types import TextContent


@asynccontextmanager
async def database(server: Server) -> AsyncIterator[sqlite3.Connection]:
    connection = sqlite3.connect(":memory:")  # made in the event loop's thread
    try:
        yield connection
    finally:
        connection.close()


server = Server("notes", lifespan=database)


@server.tool()
def count_tables(ctx: Context) -> str:
    rows = ctx.lifespan_state.execute("select count(*) from sqlite_master").fetchall()
    return str(rows[0][0])


@server.tool(run_in_thread=False)
def count_tables_on_the_loop(ctx: Context) -> str:
    rows = ctx.lifespan_state.execute("select count(*) from sqlite_master").fetchall()
    return str(rows[0][0])


async def test_a_thread_bound_object_in_a_sync_tool_fails_with_a_hint_at_the_worker_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(10):
        async with server.running(), open_in_memory(server) as client:
            failed = await client.call_tool("count_tables")
            fine = await client.call_tool("count_tables_on_the_loop")
    assert failed.is_error and isinstance(failed.content[0], TextContent)
    assert failed.content[0].text.startswith("Tool count_tables failed (error id ")
    assert fine.structured_content is None and fine.content[0] == TextContent(text="0")
    [record] = [record for record in caplog.records if "count_tables failed" in record.getMessage()]
    assert record.exc_text is not None
    assert "ProgrammingError: SQLite objects created in a thread" in record.exc_text
    assert "this sync handler ran in a worker thread, as sync handlers do" in record.exc_text
    assert "run_in_thread=False" in record.exc_text
