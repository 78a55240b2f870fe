"""The middleware trio_mcp ships, stacked on one server, over every transport: rate limits with retry-after,
a response cache dropped by the server's announcements, a size limit, error shaping and the access log."""

from __future__ import annotations

import logging
import sys

import pytest
import trio
from paths import TESTS

import trio_mcp
from trio_mcp import McpError
from trio_mcp.errors import RATE_LIMITED, RESPONSE_TOO_LARGE

sys.path.insert(0, str(TESTS / "servers"))
import shipped_middleware_server as app  # noqa: E402
from transport_helpers import connect  # noqa: E402

SERVER_SCRIPT = TESTS / "servers" / "shipped_middleware_server.py"
TRANSPORTS = ["memory", "stdio", "http-session", "http-stateless", "websocket"]


def text_of(result: trio_mcp.types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_stack_limits_shapes_and_caches_on_every_transport(transport: str) -> None:
    server = app.make_server()
    with trio.fail_after(20):
        async with connect(server, transport, stdio_script=SERVER_SCRIPT) as client:
            # Rate limit: a burst of two, then refused with the time to wait; other tools are not limited.
            assert text_of(await client.call_tool("limited", {})) == "allowed"
            assert text_of(await client.call_tool("limited", {})) == "allowed"
            with pytest.raises(McpError) as limited:
                await client.call_tool("limited", {})
            assert limited.value.code == RATE_LIMITED
            assert 990 < limited.value.data["retryAfter"] <= 1000
            assert "retry after" in limited.value.message
            assert text_of(await client.call_tool("echo", {"text": "free"})) == "free"

            # Error shaping: a mapped type becomes its wire error, from a tool or a resource alike.
            with pytest.raises(McpError) as forbidden:
                await client.call_tool("forbidden", {})
            assert (forbidden.value.code, forbidden.value.message) == (app.FORBIDDEN, "not for you")
            with pytest.raises(McpError) as secret:
                await client.read_resource("secret://plans")
            assert (secret.value.code, secret.value.message) == (app.FORBIDDEN, "plans is not for you")
            missing = await client.call_tool("lookup", {"name": "plans"})
            assert missing.is_error and text_of(missing) == "nothing called plans"
            broken = await client.call_tool("broken", {})  # not mapped: the usual failure, its text withheld
            assert broken.is_error and "error id" in text_of(broken) and "hunter2" not in text_of(broken)

            # Size limit: a response over 4096 bytes is refused, saying how big it was.
            assert len(text_of(await client.call_tool("big", {"size": 3000}))) == 3000
            with pytest.raises(McpError) as too_big:
                await client.call_tool("big", {"size": 5000})
            assert too_big.value.code == RESPONSE_TOO_LARGE
            assert too_big.value.data["limit"] == 4096 and too_big.value.data["size"] > 5000

            # Cache: a read is served from the cache until the resource is announced as updated.
            first = await client.read_resource("counter://reads")
            again = await client.read_resource("counter://reads")
            assert first.contents[0].text == again.contents[0].text == "read 1"  # type: ignore[union-attr]
            await client.call_tool("touch", {"uri": "counter://reads"})
            fresh = await client.read_resource("counter://reads")
            assert fresh.contents[0].text == "read 2"  # type: ignore[union-attr]

            assert text_of(await client.call_tool("echo", {"text": "still here"})) == "still here"


async def test_the_access_log_has_one_line_per_request_naming_the_failure(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="trio_mcp.access")
    server = app.make_server()
    async with connect(server, "http-session") as client:
        await client.call_tool("echo", {"text": "hi"})
        broken = await client.call_tool("broken", {})
        with pytest.raises(McpError):
            await client.call_tool("forbidden", {})
        with pytest.raises(McpError):
            await client.request("no/such/method", {})
    lines = [record for record in caplog.records if record.name == "trio_mcp.access"]
    by_target = {getattr(record, "target", None) or record.method: record for record in lines}  # type: ignore[attr-defined]
    assert [record.method for record in lines].count("tools/call") == 3  # type: ignore[attr-defined]
    echo = by_target["echo"]
    assert echo.getMessage().startswith("tools/call echo principal=- duration_ms=")
    assert echo.outcome == "ok" and echo.duration_ms >= 0  # type: ignore[attr-defined]
    failed = by_target["broken"]
    assert failed.outcome == "tool_error"  # type: ignore[attr-defined]
    assert failed.error_id and f"error id {failed.error_id}" in text_of(broken)  # type: ignore[attr-defined]
    # the traceback was logged under the same id
    assert any(f"(error id {failed.error_id})" in r.getMessage() for r in caplog.records if r.exc_info)  # type: ignore[attr-defined]
    assert (by_target["forbidden"].outcome, by_target["forbidden"].error_code) == ("error", app.FORBIDDEN)  # type: ignore[attr-defined]
    unknown = by_target["no/such/method"]
    assert (unknown.outcome, unknown.error_code) == ("error", -32601)  # type: ignore[attr-defined]
    assert "initialize" in by_target
