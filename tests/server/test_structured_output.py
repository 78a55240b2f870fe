"""The structured-output rule, row by row as docs/structured-output.md states it."""

from __future__ import annotations

import json
from typing import Any, TypedDict

import attrs
import pytest
import trio

from trio_mcp import Server
from trio_mcp.testing import open_in_memory
from trio_mcp.types import TextContent


class Point(TypedDict):
    x: int


@attrs.define
class Box:
    x: int


# annotation, returned value, structuredContent expected (None: no outputSchema and no structuredContent)
ROWS: list[tuple[str, Any, Any, Any]] = [
    ("str", str, "hi", None),
    ("none", type(None), None, None),
    ("content", TextContent, TextContent(text="t"), None),
    ("int", int, 5, {"result": 5}),
    ("bool", bool, True, {"result": True}),
    ("optional", int | None, None, {"result": None}),
    ("list", list[str], ["a"], {"result": ["a"]}),
    ("dict", dict, {"a": 1}, {"a": 1}),
    ("mapping", dict[str, int], {"a": 1}, {"a": 1}),
    ("typeddict", Point, {"x": 1}, {"x": 1}),
    ("attrs", Box, Box(1), {"x": 1}),
]


@pytest.mark.parametrize("name, annotation, value, structured", ROWS, ids=[row[0] for row in ROWS])
async def test_the_structured_output_rule(name: str, annotation: Any, value: Any, structured: Any) -> None:
    server = Server("rule")

    def tool() -> Any:
        return value

    tool.__annotations__ = {"return": annotation}
    server.add_tool(tool, name=name, run_in_thread=False)
    with trio.fail_after(5):
        async with open_in_memory(server, protocol_version="2025-11-25") as client:
            [listed] = (await client.list_tools()).tools
            result = await client.call_tool(name)
    if structured is None:
        assert listed.output_schema is None and result.structured_content is None
        return
    assert listed.output_schema is not None and listed.output_schema["type"] == "object"
    wrapped = "result" in (listed.output_schema.get("properties") or {}) and name not in ("dict", "mapping")
    assert wrapped is (name in ("int", "bool", "optional", "list"))
    assert result.structured_content == structured
    [block] = result.content
    assert isinstance(block, TextContent) and json.loads(block.text) == structured  # the same data, as JSON text
