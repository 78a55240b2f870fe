"""A request read by a session's own reader is served in the reader's task until its handler first blocks, and
over stdio its answer waits for the reader's next write. Seen from the client, nothing may differ from a task per
request: these tests run one server over an in-memory pair and over real pipes and check what the client gets."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import trio_mcp
from trio_mcp import Client, McpError, Server
from trio_mcp._session import InboundRequest, Session
from trio_mcp.errors import ConnectionClosed
from trio_mcp.testing import open_in_memory
from trio_mcp.transports.stdio import StdioMessageStream
from trio_mcp.types import TextContent

from transport_helpers import INITIALIZE, INITIALIZED, recording_pipes  # isort: skip

SERVER_SOURCE = """
import contextvars
import logging
import os

import trio

from trio_mcp import Context, McpLogHandler, Server

server = Server("inline", max_in_flight=int(os.environ.get("MAX_IN_FLIGHT", "256")))
VALUE = contextvars.ContextVar("value", default="unset")
gates = {}
outcomes = []


@server.tool()
async def instant(text: str) -> str:
    return text


@server.tool()
async def yielding(text: str) -> str:
    await trio.sleep(0)
    return text


@server.tool()
async def gated(name: str) -> str:
    gate = gates.setdefault(name, trio.Event())
    try:
        await gate.wait()
    except trio.Cancelled:
        outcomes.append(f"{name} cancelled")
        raise
    outcomes.append(f"{name} done")
    return name


@server.tool()
async def release(name: str) -> str:
    gates.setdefault(name, trio.Event()).set()
    return ",".join(outcomes)


@server.tool()
async def waiting(name: str) -> str:
    return "yes" if name in gates else "no"


@server.tool()
async def set_now(value: str) -> str:
    before = VALUE.get()
    VALUE.set(value)
    return before


@server.tool()
async def set_then_wait(value: str) -> str:
    before = VALUE.get()
    VALUE.set(value)
    await trio.sleep(0.01)
    return before + "->" + VALUE.get()


@server.tool()
async def get() -> str:
    return VALUE.get()


@server.tool()
async def report(steps: int, ctx: Context) -> int:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, total=steps)
        await ctx.info(f"step {step}")
    return steps


bridged = logging.getLogger("inline.bridge")
bridged.setLevel(logging.DEBUG)
bridged.propagate = False
if not bridged.handlers:  # once per process: the in-memory runs load this module again
    bridged.addHandler(McpLogHandler())


@server.tool()
async def bridge(waits: bool) -> str:
    bridged.info("before")
    if waits:
        await trio.sleep(0)
    bridged.info("after")
    return "bridged"


@server.tool()
def bridge_in_thread() -> str:
    bridged.warning("from a thread")
    return "bridged"


@server.tool()
async def foreign() -> str:
    class Bare:
        def __await__(self):
            yield "not a trio trap"

    await Bare()
    return "unreachable"
"""


def text_of(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return str(block.text)


@pytest.fixture
def server_script(tmp_path: Path) -> Path:
    script = tmp_path / "inline_server.py"
    script.write_text(SERVER_SOURCE + "\nif __name__ == '__main__':\n    trio.run(server.serve_stdio)\n")
    return script


@pytest.fixture
def max_in_flight() -> int:
    return 256


@pytest.fixture(params=["memory", "stdio"])
async def client(request: pytest.FixtureRequest, server_script: Path, max_in_flight: int) -> AsyncIterator[Client]:
    with trio.fail_after(20):
        if request.param == "memory":
            server = runpy.run_path(str(server_script))["server"]
            assert isinstance(server, Server)
            server.max_in_flight = max_in_flight
            async with open_in_memory(server) as connected:
                yield connected
        else:
            env = {**os.environ, "MAX_IN_FLIGHT": str(max_in_flight)}
            async with trio_mcp.open_stdio_client([sys.executable, str(server_script)], env=env) as connected:
                yield connected


async def call(client: Client, tool: str, **arguments: Any) -> str:
    return text_of(await client.call_tool(tool, arguments))


async def test_handlers_that_never_block_and_that_block_both_answer(client: Client) -> None:
    assert await call(client, "instant", text="now") == "now"
    assert await call(client, "yielding", text="later") == "later"
    results: dict[int, str] = {}

    async def one(n: int) -> None:
        results[n] = await call(client, "instant" if n % 2 else "yielding", text=f"call {n}")

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for n in range(64):
                nursery.start_soon(one, n)
    assert results == {n: f"call {n}" for n in range(64)}


async def test_a_blocked_handler_does_not_stop_reading_and_can_be_cancelled(client: Client) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            cancelled = trio.CancelScope()

            async def blocked() -> None:
                with cancelled:
                    await call(client, "gated", name="a")
                    raise AssertionError("the cancelled call was answered")

            nursery.start_soon(blocked)
            while await call(client, "waiting", name="a") == "no":
                await trio.sleep(0.01)
            # Served while "a" waits; then the client gives "a" up and the server's handler sees Cancelled.
            assert await call(client, "instant", text="meanwhile") == "meanwhile"
            cancelled.cancel()
        assert cancelled.cancelled_caught
        while await call(client, "release", name="b") != "a cancelled":
            await trio.sleep(0.01)
        assert client.session.statistics().outbound_pending == 0


async def test_a_blocked_handler_finishes_after_later_calls(client: Client) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            answers: list[str] = []

            async def blocked() -> None:
                answers.append(await call(client, "gated", name="c"))

            nursery.start_soon(blocked)
            while await call(client, "waiting", name="c") == "no":
                await trio.sleep(0.01)
            answers.append(await call(client, "yielding", text="first"))
            assert await call(client, "release", name="c") == ""
        assert answers == ["first", "c"]


async def test_context_variables_stay_with_their_request(client: Client) -> None:
    assert await call(client, "set_now", value="a") == "unset"
    assert await call(client, "set_now", value="b") == "unset"
    assert await call(client, "get") == "unset"
    results: dict[str, str] = {}

    async def one(value: str) -> None:
        results[value] = await call(client, "set_then_wait", value=value)

    async with trio.open_nursery() as nursery:
        for value in "xyz":
            nursery.start_soon(one, value)
    assert results == {value: f"unset->{value}" for value in "xyz"}
    assert await call(client, "get") == "unset"


async def test_progress_and_logs_arrive_before_the_result(client: Client) -> None:
    seen: list[str] = []
    client.on_log = lambda params: seen.append(f"log {params.data}")
    await client.set_logging_level("debug")
    result = await client.call_tool(
        "report", {"steps": 3}, on_progress=lambda params: seen.append(f"progress {params.progress:g}")
    )
    seen.append("result")
    assert result.structured_content == {"result": 3}
    assert seen == ["progress 1", "log step 1", "progress 2", "log step 2", "progress 3", "log step 3", "result"]


async def test_stdlib_log_records_arrive_before_the_result(client: Client) -> None:
    """Records a handler logs through the stdlib bridge (served inline, after a wait, in a worker thread) are
    held for its request and sent before its answer."""
    seen: list[str] = []
    client.on_log = lambda params: seen.append(f"log {params.data}")
    for tool, arguments in [("bridge", {"waits": False}), ("bridge", {"waits": True}), ("bridge_in_thread", {})]:
        seen.clear()
        assert text_of(await client.call_tool(tool, arguments)) == "bridged"
        seen.append("result")
        expected = ["log from a thread"] if tool == "bridge_in_thread" else ["log before", "log after"]
        assert seen == [*expected, "result"]


@pytest.mark.parametrize("max_in_flight", [4])
async def test_busy_past_max_in_flight(client: Client) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:

            async def gated(name: str) -> None:
                while True:  # the probe below may take the last place first
                    try:
                        await call(client, "gated", name=name)
                        return
                    except McpError:
                        await trio.sleep(0.01)

            for name in "pqrs":
                nursery.start_soon(gated, name)
            while True:  # until the four gated calls are all in flight
                try:
                    await call(client, "instant", text="one too many")
                except McpError as exc:
                    assert exc.code == -32010 and "Server busy" in exc.message
                    break
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        while True:  # until the cancelled calls have left
            try:
                assert await call(client, "instant", text="room again") == "room again"
                break
            except McpError:
                await trio.sleep(0.01)


async def test_a_foreign_await_fails_only_its_request(client: Client) -> None:
    result = await client.call_tool("foreign")
    assert result.is_error
    assert await call(client, "instant", text="still serving") == "still serving"


# -- over stdio, byte by byte ---------------------------------------------------------------------------------


def tool_call(request_id: int, tool: str, arguments: dict[str, Any], progress: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if progress:
        params["_meta"] = {"progressToken": f"p{request_id}"}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def test_pipelined_calls_in_one_chunk_are_all_answered_in_order(server_script: Path) -> None:
    process = await trio.lowlevel.open_process(
        [sys.executable, str(server_script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        with trio.fail_after(20):
            lines = [INITIALIZE, INITIALIZED]
            tools = ["instant", "yielding", "report"]
            lines += [
                tool_call(n, tools[n % 3], {"steps": 2} if n % 3 == 2 else {"text": str(n)}, progress=n % 3 == 2)
                for n in range(1, 61)
            ]
            await process.stdin.send_all(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
            buffer = b""
            events: list[tuple[Any, str]] = []
            answered: set[Any] = set()
            while len(answered) < 61:
                chunk = await process.stdout.receive_some(65536)
                assert chunk, "the server closed stdout"
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                for raw in complete:
                    message = json.loads(raw)
                    if "id" in message:
                        answered.add(message["id"])
                        assert "result" in message, message
                        events.append((message["id"], "result"))
                        if message["id"] and message["id"] % 3 != 2:
                            assert message["result"]["content"][0]["text"] == str(message["id"])
                    elif message["method"] == "notifications/progress":
                        request_id = int(message["params"]["progressToken"][1:])
                        events.append((request_id, f"progress {message['params']['progress']}"))
            for n in range(2, 61, 3):
                assert [what for request_id, what in events if request_id == n] == [
                    "progress 1",
                    "progress 2",
                    "result",
                ]
            assert answered == set(range(61))
    finally:
        process.kill()
        await process.wait()


class Echo:
    """A RequestHandler that answers at once, with the request's params."""

    inline_methods: frozenset[str] = frozenset()

    async def handle_request(self, request: InboundRequest) -> Any:
        return request.params

    async def handle_notification(self, method: str, params: Any) -> None:
        return None


async def test_answers_to_one_chunk_go_out_in_one_write() -> None:
    incoming, outgoing, writes = recording_pipes()
    incoming.put_data(
        b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"m","params":{"n":%d}}\n' % (n, n) for n in range(10))
    )
    session = Session(StdioMessageStream(incoming, outgoing), Echo())
    async with trio.open_nursery() as nursery:
        await nursery.start(session.run)
        await trio.testing.wait_all_tasks_blocked()
        session.close()
    assert len(writes) == 1
    answers = [json.loads(line) for line in writes[0].splitlines()]
    assert answers == [{"jsonrpc": "2.0", "id": n, "result": {"n": n}} for n in range(10)]


async def test_a_broken_stdout_closes_the_session_with_connection_closed() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    incoming = trio.testing.MemoryReceiveStream()
    incoming.put_data(b'{"jsonrpc":"2.0","id":1,"method":"m"}\n')
    stream = StdioMessageStream(incoming, trio.lowlevel.FdStream(write_end))
    session = Session(stream, Echo())
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
    assert session.closed
    with pytest.raises(ConnectionClosed, match="stdio pipe closed"):
        await session.notify("anything")
    await stream.aclose()


class BlockingNotifications(Echo):
    """Echo, with a notification handler that waits until released."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.notified = trio.Event()

    async def handle_notification(self, method: str, params: Any) -> None:
        self.notified.set()
        await self.release.wait()


async def test_answers_waiting_for_a_write_do_not_wait_for_a_notification_handler() -> None:
    incoming = trio.testing.MemoryReceiveStream()
    outgoing = trio.testing.MemorySendStream()
    incoming.put_data(
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":1}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"m","params":{"n":2}}\n'
        b'{"jsonrpc":"2.0","method":"slow/notification"}\n'
    )
    handler = BlockingNotifications()
    session = Session(StdioMessageStream(incoming, outgoing), handler)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            await handler.notified.wait()
            await trio.testing.wait_all_tasks_blocked()
            # The handler still blocks the reader, yet both answers are out.
            answers = [json.loads(line) for line in outgoing.get_data_nowait().splitlines()]
            assert [answer["id"] for answer in answers] == [1, 2]
            handler.release.set()
            session.close()


async def test_cancelling_one_of_several_blocked_requests_cancels_that_one_only(client: Client) -> None:
    # Each blocked request was served inline by a reader that then handed reading on: a cancel reaches the scope
    # of that request's task, never another request's or the reader's.
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            scopes = {name: trio.CancelScope() for name in ("d", "e", "f")}
            answers: list[str] = []

            async def blocked(name: str) -> None:
                with scopes[name]:
                    answers.append(await call(client, "gated", name=name))

            for name in scopes:
                nursery.start_soon(blocked, name)
                while await call(client, "waiting", name=name) == "no":
                    await trio.sleep(0.01)
            scopes["e"].cancel()
            while "e cancelled" not in await call(client, "release", name="none"):
                await trio.sleep(0.01)
            assert await call(client, "instant", text="still reading") == "still reading"
            for name in ("d", "f"):
                await call(client, "release", name=name)
        assert sorted(answers) == ["d", "f"]
        outcomes = (await call(client, "release", name="none")).split(",")
        assert sorted(outcomes) == ["d done", "e cancelled", "f done"]


class SelfCancelling(Echo):
    """Echo, but a request for ``cancel-me`` cancels its own scope before its first wait."""

    async def handle_request(self, request: InboundRequest) -> Any:
        if request.method == "cancel-me":
            request.cancel_scope.cancel()
            await trio.sleep(0)
            raise AssertionError("not cancelled")
        return request.params


async def test_a_request_that_cancels_itself_before_it_blocks_ends_alone() -> None:
    incoming = trio.testing.MemoryReceiveStream()
    outgoing = trio.testing.MemorySendStream()
    incoming.put_data(
        b'{"jsonrpc":"2.0","id":1,"method":"cancel-me"}\n{"jsonrpc":"2.0","id":2,"method":"m","params":{"n":2}}\n'
    )
    session = Session(StdioMessageStream(incoming, outgoing), SelfCancelling())
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            await trio.testing.wait_all_tasks_blocked()
            assert not session.closed
            incoming.put_data(b'{"jsonrpc":"2.0","id":3,"method":"m","params":{"n":3}}\n')
            await trio.testing.wait_all_tasks_blocked()
            answers = [json.loads(line) for line in outgoing.get_data_nowait().splitlines()]
            session.close()
    assert answers == [{"jsonrpc": "2.0", "id": n, "result": {"n": n}} for n in (2, 3)]


class Gated(Echo):
    """Echo, but ``wait`` waits until an ``open`` request arrives."""

    def __init__(self) -> None:
        self.gate = trio.Event()

    async def handle_request(self, request: InboundRequest) -> Any:
        if request.method == "wait":
            await self.gate.wait()
        elif request.method == "open":
            self.gate.set()
        return request.params


async def test_a_cancel_read_with_what_unblocks_its_request_ends_that_request_unanswered() -> None:
    # The cancel takes effect as it is read, before the reader lets the other tasks run to write the answers it
    # holds: the request it cancels is not answered, though what let that request go on came in the same read.
    incoming = trio.testing.MemoryReceiveStream()
    outgoing = trio.testing.MemorySendStream()
    session = Session(StdioMessageStream(incoming, outgoing), Gated())
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            incoming.put_data(b'{"jsonrpc":"2.0","id":1,"method":"wait","params":{"n":1}}\n')
            await trio.testing.wait_all_tasks_blocked()
            incoming.put_data(
                b'{"jsonrpc":"2.0","id":2,"method":"open","params":{"n":2}}\n'
                b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n'
            )
            await trio.testing.wait_all_tasks_blocked()
            answers = [json.loads(line) for line in outgoing.get_data_nowait().splitlines()]
            session.close()
    assert answers == [{"jsonrpc": "2.0", "id": 2, "result": {"n": 2}}]
