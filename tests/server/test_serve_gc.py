"""A serving process keeps what it made before serving out of the garbage collector's full passes
(``gc.freeze``), and still collects what it makes while serving."""

from __future__ import annotations

import json
import sys

import trio

import trio_mcp

SERVE = """
import gc, trio
from trio_mcp import Server

server = Server("gc")
made_before = {"a long-lived object": [1, 2, 3]}

@server.tool()
def report() -> str:
    cycle: list[object] = []
    cycle.append(cycle)  # garbage only the collector can free
    del cycle
    made_before_is_frozen = all(obj is not made_before for obj in gc.get_objects())
    return f'{{"frozen": {gc.get_freeze_count()}, "made_before_is_frozen": {str(made_before_is_frozen).lower()}, '\\
        f'"collected": {gc.collect()}}}'

trio.run(server.serve_stdio)
"""


async def test_objects_made_before_serving_are_frozen_and_new_garbage_is_still_collected() -> None:
    with trio.fail_after(30):
        async with trio_mcp.open_stdio_client([sys.executable, "-c", SERVE]) as client:
            result = await client.call_tool("report", {})
    report = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert report["frozen"] > 1000  # the modules, classes and registry made before serve_stdio
    assert report["made_before_is_frozen"] is True  # gc.get_objects() leaves out frozen objects
    assert report["collected"] >= 1  # the handler's cycle, made after serving began
