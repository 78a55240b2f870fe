"""The proxy: any MCP server served as ours, over real pipes upstream, with progress, logs, server requests and
cancellation forwarded; and ``trio-mcp proxy`` on the command line."""

from __future__ import annotations

import functools
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from cli_helpers import CLI_SERVER, run_cli, start
from waiting import wait_until

from trio_mcp import Context, Server
from trio_mcp.proxy import open_proxy
from trio_mcp.testing import open_in_memory
from trio_mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    Root,
    TextContent,
)

UPSTREAM = [sys.executable, str(CLI_SERVER)]


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.parametrize("downstream", ["2025-11-25", "2026-07-28"])
async def test_mirrors_tools_prompts_and_resources_in_either_era(downstream: str) -> None:
    with trio.fail_after(30):
        async with (
            open_proxy(UPSTREAM, protocol_version="2025-06-18") as server,
            open_in_memory(server, protocol_version=downstream) as client,
        ):
            assert client.protocol_version == downstream
            assert client.server_info.name == "cli-test-server" and client.instructions
            tools = {tool.name: tool async for tool in client.iter_tools()}
            assert {"echo", "add", "steps", "wait_for_cancel"} <= set(tools)
            assert tools["add"].input_schema["required"] == ["a", "b"]
            assert tools["add"].output_schema is not None
            assert tools["add"].output_schema["properties"]["result"]["type"] == "number"
            assert text(await client.call_tool("echo", {"text": "through"})) == "through"
            result = await client.call_tool("add", {"a": 1, "b": 2.5})
            assert result.structured_content == {"result": 3.5}
            failed = await client.call_tool("fail", {"reason": "upstream says no"})
            assert failed.is_error is True and "upstream says no" in text(failed)
            updates: list[ProgressNotificationParams] = []
            await client.call_tool("steps", {"count": 3}, on_progress=updates.append)
            assert [(u.progress, u.message) for u in updates] == [(1, "step 1"), (2, "step 2"), (3, "step 3")]
            prompt = await client.get_prompt("review", {"language": "rust"})
            assert prompt.messages[0].content == TextContent(text="Review this rust code, brief.")
            read = await client.read_resource("memo://greeting")
            assert read.contents[0].text == "hello from a resource"  # type: ignore[union-attr]


async def test_cancelling_the_downstream_call_cancels_upstream(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with trio.fail_after(30):
        async with open_proxy(UPSTREAM) as server, open_in_memory(server) as client:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client.call_tool, "wait_for_cancel", {"marker": str(marker)})
                await wait_until(marker.exists)
                cancelled_at = time.perf_counter()
                nursery.cancel_scope.cancel()
            await wait_until(lambda: "cancel requested" in marker.read_text(), interval=0.005)
            latency = time.perf_counter() - cancelled_at
    assert marker.read_text().splitlines() == ["started", "cancel requested by the client"]
    assert latency < 1.0, f"the upstream server saw the cancel after {latency:.3f} s"


async def test_sampling_and_elicitation_reach_the_downstream_client() -> None:
    asked: list[str] = []

    async def elicit(params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"nights": 2, "style": "fast"})

    async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        asked.append("sampling")
        return CreateMessageResult(role="assistant", content=TextContent(text="walk a lot"), model="m")

    upstream = [sys.executable, "-m", "trio_mcp.examples.elicitation_sampling", "serve"]
    with trio.fail_after(30):
        async with (
            open_proxy(upstream, protocol_version="2025-11-25") as server,
            open_in_memory(server, protocol_version="2025-11-25", elicitation=elicit, sampling=sample) as client,
        ):
            result = await client.call_tool("plan_trip", {"destination": "Oslo"})
    assert text(result) == "2 nights in Oslo: walk a lot [model m, 2025-11-25]"
    assert asked == ["How long, and what kind of trip to Oslo?", "sampling"]


@pytest.mark.parametrize("downstream", ["2025-11-25", "2026-07-28"])
async def test_upstream_logs_reach_the_downstream_call(downstream: str) -> None:
    logs: list[LoggingMessageNotificationParams] = []
    with trio.fail_after(30):
        async with (
            open_proxy(UPSTREAM, protocol_version="2025-11-25") as server,
            open_in_memory(server, protocol_version=downstream, on_log=logs.append) as client,
        ):
            await client.set_logging_level("info")
            assert text(await client.call_tool("announce", {"text": "mind the gap"})) == "mind the gap"
    assert [(log.level, log.logger, log.data) for log in logs] == [("warning", "announcer", "mind the gap")]


async def test_roots_requests_reach_the_downstream_client() -> None:
    async def roots() -> list[Root]:
        return [Root(uri="file:///work/project")]

    upstream = [sys.executable, str(CLI_SERVER.parent / "stdio_server.py")]
    with trio.fail_after(30):
        async with (
            open_proxy(upstream, protocol_version="2025-11-25") as server,
            open_in_memory(server, protocol_version="2025-11-25", roots=roots) as client,
        ):
            assert text(await client.call_tool("roots_probe", {"timeout": 10})) == "file:///work/project"


async def test_open_proxy_needs_exactly_one_upstream() -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        async with open_proxy():
            pass


async def test_proxy_on_the_command_line_bridges_stdio_to_stateless_http() -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            running = await start(nursery, "proxy", "-t", "http", "--port", "0", "--", *UPSTREAM)
            found = await running.wait_for_stderr(r"proxying cli-test-server \(\S+\) on (\S+) ")
            url = found.group(1)
            out = await run_cli("info", "--json", "--url", url)
            assert '"era": "modern"' in out.stdout
            out = await run_cli("call", "steps", "count=2", "--url", url)
            assert out.status == 0 and out.stdout.strip() == "2 steps" and "progress 2/2" in out.stderr
            running.process.send_signal(signal.SIGINT)
            status = await running.process.wait()
    assert status == 130
    assert "Traceback" not in running.stderr.decode()


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_concurrent_calls_through_an_http_upstream_each_get_their_own_questions_and_logs(
    nursery: trio.Nursery, version: str
) -> None:
    """Over HTTP the upstream says which call its questions and logs belong to: a modern upstream asks inside
    the call's answer, a legacy-era one on the call's own response stream. The proxy routes them exactly."""
    upstream = Server("upstream")
    both_arrived = trio.Event()
    arrived: list[str] = []

    @upstream.tool()
    async def ask(topic: str, ctx: Context) -> str:
        if topic not in arrived:
            arrived.append(topic)
        if len(arrived) == 2:
            both_arrived.set()
        await both_arrived.wait()  # both calls are in flight before either asks
        await ctx.log("warning", f"working on {topic}")
        answer = await ctx.elicit(f"about {topic}?", {"type": "object", "properties": {"who": {"type": "string"}}})
        return f"{topic} answered by {answer.content['who'] if answer.content else None}"

    port = await nursery.start(functools.partial(upstream.serve_http, "127.0.0.1", 0))

    def answering_as(who: str) -> Any:
        async def elicit(params: ElicitRequestParams) -> ElicitResult:
            return ElicitResult(action="accept", content={"who": who})

        return elicit

    results: dict[str, str] = {}
    logs: dict[str, list[Any]] = {"alice": [], "bob": []}
    with trio.fail_after(30):
        async with open_proxy(url=f"http://127.0.0.1:{port}/mcp", protocol_version=version) as server:

            async def call(who: str, topic: str) -> None:
                async with open_in_memory(
                    server, protocol_version="2025-11-25", elicitation=answering_as(who), on_log=logs[who].append
                ) as client:
                    await client.set_logging_level("info")
                    results[topic] = text(await client.call_tool("ask", {"topic": topic}))

            async with trio.open_nursery() as calls:
                calls.start_soon(call, "alice", "tea")
                calls.start_soon(call, "bob", "coffee")
    assert results == {"tea": "tea answered by alice", "coffee": "coffee answered by bob"}
    # each client got its own call's logs (a modern upstream runs the tool again for the answer: logs twice)
    assert logs["alice"] and {log.data for log in logs["alice"]} == {"working on tea"}
    assert logs["bob"] and {log.data for log in logs["bob"]} == {"working on coffee"}
