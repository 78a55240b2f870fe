"""Testing a server with the trio_mcp pytest plugin: ``pytest trio_mcp/examples/test_bookshop.py``.

The plugin (installed with trio_mcp) provides the client fixtures; this file only says which server to test.
``autojump_clock`` (from pytest-trio) runs a test in virtual time: the in-memory client has no real I/O, so
timeouts and sleeps of any length pass in milliseconds.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from trio_mcp import Client, RequestTimeout, Server
from trio_mcp.examples.bookshop import server as bookshop
from trio_mcp.examples.cancellation import journal
from trio_mcp.examples.cancellation import server as importer
from trio_mcp.types import ProgressNotificationParams, TextContent

pytestmark = pytest.mark.trio


@pytest.fixture
def mcp_server() -> Server:
    """The server the client fixtures talk to; a test may pick another with parametrize (below)."""
    return bookshop


@pytest.mark.parametrize("mcp_server", [bookshop, importer], ids=["bookshop", "importer"])
async def test_lists_tools(mcp_client: Client, mcp_server: Server) -> None:
    names = {tool.name async for tool in mcp_client.iter_tools()}
    assert names == set(mcp_server.tools)


async def test_search_reports_progress(mcp_client: Client) -> None:
    updates: list[ProgressNotificationParams] = []
    result = await mcp_client.call_tool("search_books", {"query": "dune"}, on_progress=updates.append)
    assert result.structured_content == {"result": ["Dune", "Dune Messiah", "Children of Dune"]}
    assert [update.progress for update in updates] == [1, 2, 3]


async def test_a_bad_argument_is_a_tool_error(mcp_client: Client) -> None:
    result = await mcp_client.call_tool("search_books", {"query": 42})
    assert result.is_error is True
    block = result.content[0]
    assert isinstance(block, TextContent) and "query: expected string" in block.text


@pytest.mark.parametrize("mcp_server", [importer])
async def test_cancelled_import_is_rolled_back(mcp_client: Client, autojump_clock: trio.testing.MockClock) -> None:
    journal.clear()
    with trio.move_on_after(0.5):  # virtual seconds: two batches of 0.2 s get done
        await mcp_client.call_tool("import_rows", {"batches": 1000})
    await trio.sleep(1)  # let the server's shielded cleanup finish
    assert journal == ["import started", "cancelled: rolled back 200 rows"]


@pytest.mark.parametrize("mcp_server", [importer])
async def test_a_day_long_import_times_out_in_virtual_time(
    mcp_client: Client, autojump_clock: trio.testing.MockClock
) -> None:
    journal.clear()
    with pytest.raises(RequestTimeout):
        await mcp_client.call_tool("import_rows", {"batches": 432_000}, timeout=3600, max_total_timeout=3600)
    assert trio.current_time() >= 3600
