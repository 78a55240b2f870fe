"""A stateless request served alone (``serve_connection(stream, runner=InCaller())``, what the HTTP transport does
for every 2026-07-28 POST: no reader, no task of its own) sends exactly what the session engine's reader sends
for the same request: the same notifications in the same order, the same answer or error."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import trio

from trio_mcp import Context, Server
from trio_mcp.errors import ConnectionClosed
from trio_mcp.transports import InCaller, Spawn, TaskSet, memory_stream_pair

from test_stateless_server import make_server, request  # isort: skip


SERVED_IN: list[trio.lowlevel.Task] = []


def server_with_failures() -> Server:
    server = make_server()

    @server.tool()
    async def broken() -> str:
        raise RuntimeError("the disk is on fire")

    @server.tool()
    async def where() -> str:
        SERVED_IN.append(trio.lowlevel.current_task())
        return "here"

    @server.tool()
    async def unencodable(ctx: Context) -> Any:
        await ctx.info("about to fail")
        return {"value": float("nan")}

    return server


class Collected:
    """The ``MessageStream`` of a request served alone: it gives the one message, and keeps what is sent."""

    def __init__(self, message: Any) -> None:
        self.message = message
        self.sent: list[Any] = []

    async def send(self, message: Any, *, related_request_id: Any = None, final: bool = False) -> None:
        self.sent.append(json.loads(json.dumps(message)))

    async def receive(self) -> Any:
        message, self.message = self.message, None
        if message is None:
            raise ConnectionClosed("one message")
        return message

    async def aclose(self) -> None:
        pass


def normalized(messages: list[Any]) -> list[Any]:
    """Drop what differs by design between two servings: signatures (time-stamped) and failure ids (random)."""
    text = re.sub(r"error id [0-9a-f]+", "error id <random>", json.dumps(messages, sort_keys=True))
    found = json.loads(text)
    for message in found:
        result = message.get("result") if isinstance(message, dict) else None
        if isinstance(result, dict) and "requestState" in result:
            result["requestState"] = "<signed>"
    return found


CASES = [
    request(1, "server/discover"),
    request(2, "tools/list"),
    request(
        3,
        "tools/call",
        {"name": "chatty", "arguments": {}},
        progressToken="p",
        **{"io.modelcontextprotocol/logLevel": "debug"},
    ),
    request(4, "tools/call", {"name": "greet", "arguments": {}}, capabilities={"elicitation": {}}),
    request(5, "tools/call", {"name": "broken", "arguments": {}}),
    request(6, "tools/call", {"name": "nowhere", "arguments": {}}),
    request(7, "resources/read", {"uri": "test://elsewhere"}),
    request(8, "no/such/method"),
    request(9, "prompts/get", {"name": "hello"}),
    request(10, "tools/call", {"name": "unencodable", "arguments": {}}, **{"io.modelcontextprotocol/logLevel": "info"}),
    {"jsonrpc": "2.0", "id": 11, "method": "tools/list", "params": {}},  # no envelope
]


@pytest.mark.parametrize("message", CASES, ids=lambda message: f"{message['id']}-{message['method']}")
async def test_served_alone_sends_what_the_reader_path_sends(message: dict[str, Any]) -> None:
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            ours, theirs = memory_stream_pair()
            nursery.start_soon(lambda: server_with_failures().serve_connection(ours, modern_only=True))
            await theirs.send(message)
            through_reader = []
            while not through_reader or "id" not in through_reader[-1]:
                through_reader.append(await theirs.receive())
            nursery.cancel_scope.cancel()
        alone = Collected(message)
        await server_with_failures().serve_connection(alone, modern_only=True, runner=InCaller())
    assert normalized(alone.sent) == normalized(through_reader)
    assert "id" in alone.sent[-1] and len(alone.sent) >= 1


async def test_a_request_served_alone_runs_in_the_callers_task() -> None:
    SERVED_IN.clear()
    alone = Collected(request(1, "tools/call", {"name": "where", "arguments": {}}))
    await server_with_failures().serve_connection(alone, modern_only=True, runner=InCaller())
    assert SERVED_IN == [trio.lowlevel.current_task()]
    assert alone.sent[-1]["result"]["content"][0]["text"] == "here"


async def test_cancelling_a_request_served_alone_sends_no_answer() -> None:
    """Closing a stateless request's stream is its cancellation: the handler ends now and nothing is answered."""
    server = Server("slow")
    cancelled = []

    @server.tool()
    async def slow() -> str:
        try:
            await trio.sleep_forever()
        finally:
            cancelled.append(True)
        return "never"

    alone = Collected(request(1, "tools/call", {"name": "slow", "arguments": {}}))
    with trio.move_on_after(0.2) as scope:
        await server.serve_connection(alone, modern_only=True, runner=InCaller())
    assert scope.cancelled_caught and cancelled == [True]
    assert alone.sent == []


async def test_a_runner_that_is_not_one_of_the_three_is_a_type_error_at_the_call() -> None:
    server = Server("runners")
    ours, _ = memory_stream_pair()
    with pytest.raises(TypeError, match="runner must be None, Spawn"):
        await server.serve_connection(ours, runner="in caller")  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        with pytest.raises(TypeError, match=r"runner=Spawn\(tasks\) needs a TaskSet for tasks and a control="):
            await server.serve_connection(ours, runner=Spawn(nursery))
        with pytest.raises(TypeError, match="needs a TaskSet"):  # a set, but nothing to hand messages over
            await server.serve_connection(ours, runner=Spawn(TaskSet(nursery, on_failure=lambda exc: None)))


async def test_each_request_is_read_with_what_its_own_meta_declares() -> None:
    """Requests alike but for their client's capabilities or info each see their own, and a malformed envelope is
    refused after well-formed ones all the same."""
    server = Server("who")

    @server.tool()
    async def who(ctx: Context) -> str:
        info = ctx.client_info
        return f"{info.name if info else None} sampling={ctx.client_capabilities.sampling is not None}"

    async def ask(capabilities: dict[str, Any], info: Any) -> dict[str, Any]:
        message = request(1, "tools/call", {"name": "who", "arguments": {}}, capabilities=capabilities)
        message["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] = info
        alone = Collected(message)
        await server.serve_connection(alone, modern_only=True, runner=InCaller())
        return alone.sent[-1]

    def text(answer: dict[str, Any]) -> str:
        return answer["result"]["content"][0]["text"]

    plain, sampling = {}, {"sampling": {}}
    assert text(await ask(plain, {"name": "a", "version": "1"})) == "a sampling=False"
    assert text(await ask(sampling, {"name": "a", "version": "1"})) == "a sampling=True"
    assert text(await ask(plain, {"name": "b", "version": "1"})) == "b sampling=False"
    assert text(await ask(plain, {"name": "a", "version": "1"})) == "a sampling=False"
    assert (await ask({"sampling": []}, {"name": "a", "version": "1"}))["error"]["code"] == -32602
    assert (await ask(plain, {"name": 7, "version": "1"}))["error"]["code"] == -32602
    assert text(await ask(plain, "not an object")) == "None sampling=False"
