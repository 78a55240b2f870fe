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


class Opaque:
    """An object with no JSON form."""


def make_mismatched_server() -> Server:
    server = Server("mismatched")

    @server.tool()
    def count() -> int:
        return "many"  # type: ignore[return-value]

    @server.tool()
    def tags():  # type: ignore[no-untyped-def]
        return {"b", "a"}

    @server.tool()
    def opaque():  # type: ignore[no-untyped-def]
        return Opaque()

    @server.tool()
    def raw():  # type: ignore[no-untyped-def]
        return b"\x00\x01"

    return server


async def test_a_value_the_annotation_or_json_cannot_carry_fails_the_call_naming_the_tool_and_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_mismatched_server(), protocol_version="2025-11-25") as client:
            tags = await client.call_tool("tags")
            failed = {name: await client.call_tool(name) for name in ("count", "opaque", "raw")}
    [block] = tags.content
    assert isinstance(block, TextContent) and json.loads(block.text) == ["a", "b"]  # a set is data, not its repr
    for name, result in failed.items():
        [text] = result.content
        assert result.is_error and isinstance(text, TextContent) and text.text.startswith(f"Tool {name} failed")
        assert "Opaque object at" not in text.text and "\\x00" not in text.text
    logged = "\n".join(record.getMessage() + "\n" + (record.exc_text or "") for record in caplog.records)
    assert "TypeError: tool 'count' returned a value of type str that its return annotation does not allow" in logged
    assert "expected integer" in logged
    assert "TypeError: tool 'opaque' returned a value of type Opaque that cannot be sent as JSON" in logged
    assert "TypeError: tool 'raw' returned a value of type bytes that cannot be sent as JSON" in logged
    assert "no bare binary content" in logged


def test_bytes_as_a_return_annotation_is_refused_at_registration_saying_what_to_return() -> None:
    server = Server("binary")
    with pytest.raises(TypeError, match=r"^tool 'png': -> bytes cannot be a tool's result; .*ImageContent"):

        @server.tool()
        def png() -> bytes:
            return b"\x89PNG"
