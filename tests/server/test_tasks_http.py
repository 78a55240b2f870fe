"""Tasks over real Streamable HTTP on 127.0.0.1: a trio_mcp client and server in both eras (2026-07-28
stateless requests with the Mcp-Name routing header; 2025-11-25 sessions), a question answered mid-task, and
a cancelled call whose task ends cancelled on the server."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp import Context, Server
from trio_mcp.server import TaskManager
from trio_mcp.types import ElicitResult

from waiting import wait_until  # isort: skip

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def make_server() -> tuple[Server, TaskManager, dict[str, Any]]:
    manager = TaskManager(poll_interval=0.02)
    server = Server("tasks-http", tasks=manager)
    seen: dict[str, Any] = {"cancelled": 0}

    @server.tool(task_support="optional")
    async def greet_later(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "asking")
        answer = await ctx.elicit("Your name?", NAME_FORM)
        await trio.sleep(0.05)
        return f"Hello, {(answer.content or {}).get('name')}"

    @server.tool(task_support="required")
    async def forever() -> str:
        try:
            await trio.sleep_forever()
        finally:
            seen["cancelled"] += 1
        raise AssertionError("unreachable")

    return server, manager, seen


async def answer(request: Any) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Grace"})


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_task_with_a_question_and_a_cancelled_task_over_http(version: str) -> None:
    server, manager, seen = make_server()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/mcp"
            async with trio_mcp.open_http_client(url, protocol_version=version, elicitation=answer) as client:
                result = await client.call_tool_as_task("greet_later")
                assert result.content[0].text == "Hello, Grace"  # type: ignore[union-attr]
                statuses: list[str] = []
                with trio.move_on_after(0.5) as scope:
                    await client.call_tool_as_task("forever", on_status=lambda t: statuses.append(t["taskId"]))
                assert scope.cancelled_caught
                await wait_until(lambda: not manager.running_tasks())
                record = await manager.store.load(statuses[0])
                assert record is not None and record.status == "cancelled"
            nursery.cancel_scope.cancel()
    assert seen["cancelled"] == 1
