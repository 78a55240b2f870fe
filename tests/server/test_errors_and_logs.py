"""What a user sees when a tool fails (the model, the operator's log) and the order logs and results arrive in."""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest
import trio
from paths import TESTS

import trio_mcp
from trio_mcp import Server, ToolError
from trio_mcp.testing import open_in_memory
from trio_mcp.types import TextContent

sys.path.insert(0, str(TESTS / "servers"))
import fault_server  # noqa: E402

FAULTY = [sys.executable, str(TESTS / "servers" / "fault_server.py")]


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


async def test_an_unexpected_failure_is_logged_with_the_id_the_model_sees(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="trio_mcp.server")
    with trio.fail_after(5):
        async with open_in_memory(fault_server.server) as client:
            result = await client.call_tool("explode", {"kind": "Exception"})
    assert result.is_error is True
    text = text_of(result)
    assert text.startswith("Tool explode failed (error id ") and "hunter2" not in text
    error_id = text.rsplit(" ", 1)[1].rstrip(")")
    [record] = [r for r in caplog.records if r.name == "trio_mcp.server"]
    assert record.levelno == logging.ERROR
    assert error_id in record.getMessage()
    assert record.exc_info is not None and "hunter2" in str(record.exc_info[1])


async def test_deliberate_errors_keep_their_message() -> None:
    with trio.fail_after(5):
        async with open_in_memory(fault_server.server) as client:
            result = await client.call_tool("deliberate")
            assert result.is_error is True
            assert text_of(result) == "the quota is exhausted; try again tomorrow"


async def test_expose_errors_shows_the_details() -> None:
    server = Server("dev", expose_errors=True)

    @server.tool()
    async def leak() -> str:
        raise RuntimeError("db password=hunter2")

    @server.tool()
    async def group() -> str:
        async with trio.open_nursery() as nursery:

            async def fail() -> None:
                raise ToolError("no seats left")

            nursery.start_soon(fail)
        return "unreachable"

    with trio.fail_after(5):
        async with open_in_memory(server) as client:
            shown = text_of(await client.call_tool("leak"))
            assert "RuntimeError: db password=hunter2" in shown and "Traceback" in shown
            assert text_of(await client.call_tool("group")) == "no seats left"  # a ToolError inside a nursery


@pytest.mark.parametrize("value", [1, "yes", None])
def test_expose_errors_is_validated(value: Any) -> None:
    with pytest.raises(TypeError, match="expose_errors"):
        Server("x", expose_errors=value)


@pytest.mark.parametrize("tool", ["log_then_return", "log_from_thread"])
@pytest.mark.parametrize("transport", ["stdio", "memory", "http-session", "http-stateless"])
async def test_logs_emitted_by_a_handler_arrive_before_its_result(
    transport: str, tool: str, nursery: trio.Nursery
) -> None:
    logs: list[Any] = []
    options: dict[str, Any] = {"protocol_version": "2025-11-25", "on_log": logs.append}
    with trio.fail_after(15):
        if transport == "stdio":
            opener = trio_mcp.open_stdio_client(FAULTY, **options)
        elif transport.startswith("http"):
            if transport == "http-stateless":
                options["protocol_version"] = "2026-07-28"
            port = await nursery.start(fault_server.server.serve_http, "127.0.0.1", 0)
            opener = trio_mcp.open_http_client(f"http://127.0.0.1:{port}/mcp", **options)
        else:
            opener = open_in_memory(fault_server.server, **options)
        async with opener as client:
            await client.set_logging_level("debug")  # on 2026-07-28 each request then carries the level
            for _ in range(20):
                logs.clear()
                assert text_of(await client.call_tool(tool, {"n": 5})) == "logged"
                assert len(logs) == 5, logs  # every record came before the result, nothing is still on the way
                assert [entry.data.rsplit(" ", 1)[1] for entry in logs] == ["0", "1", "2", "3", "4"]
