"""Nothing one handler does takes the server down: every failure becomes an answer to that request alone.

Over real transports: the stdio server in a subprocess, and ``serve_http`` on 127.0.0.1 in both eras.
"""

from __future__ import annotations

import sys
from typing import Any, AsyncIterator, Callable

import pytest
import trio
from paths import ROOT, TESTS
from transport_helpers import INITIALIZED, initialize_request

import trio_mcp
from trio_mcp.types import TextContent

sys.path.insert(0, str(TESTS / "servers"))
import fault_server  # noqa: E402

FAULTY = [sys.executable, str(TESTS / "servers" / "fault_server.py")]
ERAS = ["2025-11-25", "2026-07-28"]

#: Calls whose handler fails: a BaseException, SystemExit, GeneratorExit, a stray Cancelled, an Exception.
CRASHERS: list[tuple[str, dict[str, Any]]] = [
    *(("explode", {"kind": kind}) for kind in ("BaseException", "SystemExit", "GeneratorExit")),
    ("escape_cancelled", {}),
    ("explode", {"kind": "Exception"}),
]


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


Opener = Callable[[str], Any]


@pytest.fixture(params=["stdio", "http-session", "http-stateless"])
async def open_faulty(request: Any, nursery: trio.Nursery) -> AsyncIterator[Opener]:
    kind = request.param
    if kind == "stdio":
        yield lambda: trio_mcp.open_stdio_client(FAULTY, protocol_version="2025-11-25", stderr="capture")
        return
    port = await nursery.start(fault_server.server.serve_http, "127.0.0.1", 0)
    version = "2025-11-25" if kind == "http-session" else "2026-07-28"
    yield lambda: trio_mcp.open_http_client(f"http://127.0.0.1:{port}/mcp", protocol_version=version)


@pytest.mark.parametrize(("tool", "arguments"), CRASHERS)
async def test_a_failing_tool_is_an_error_result_and_the_server_lives_on(
    open_faulty: Any, tool: str, arguments: dict[str, Any]
) -> None:
    with trio.fail_after(15):
        async with open_faulty() as client:
            slow_result: list[Any] = []

            async def slow() -> None:
                slow_result.append(await client.call_tool("nap", {"seconds": 0.3}))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(slow)
                while not slow_result and (await client.call_tool("naps")).structured_content == {"result": 0}:
                    pass  # until the nap runs in the server (each call is a round trip: no spin)
                result = await client.call_tool(tool, arguments)
            assert result.is_error is True
            assert f"Tool {tool} failed" in text_of(result)
            assert "hunter2" not in text_of(result)
            assert text_of(slow_result[0]) == "rested"  # the concurrent call was not lost
            assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"
        async with open_faulty() as again:  # and the server still takes new clients
            assert text_of(await again.call_tool("echo", {"text": "alive"})) == "alive"


@pytest.mark.parametrize("tool, word", [("own_deadline", "timed out"), ("own_cancel", "cancelled")])
async def test_a_tool_bounding_its_own_run_time_is_answered(open_faulty: Any, tool: str, word: str) -> None:
    with trio.fail_after(15):
        async with open_faulty() as client:
            with trio.fail_after(5):
                result = await client.call_tool(tool)
            assert result.is_error is True
            assert word in text_of(result)
            assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"


async def test_resources_and_prompts_fail_with_a_generic_error(open_faulty: Any) -> None:
    with trio.fail_after(15):
        async with open_faulty() as client:
            for call in (
                lambda: client.read_resource("fault://secret"),
                lambda: client.read_resource("fault://custom"),
                lambda: client.get_prompt("secret_prompt"),
            ):
                with pytest.raises(trio_mcp.McpError) as info:
                    await call()
                assert info.value.code == -32603
                assert "hunter2" not in info.value.message
                assert "error id" in info.value.message
            with pytest.raises(trio_mcp.McpError) as timed_out:
                await client.get_prompt("slow_prompt")
            assert "timed out" in timed_out.value.message
            assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"


async def test_stdio_server_survives_and_reports_on_stderr() -> None:
    lines: list[str] = []
    with trio.fail_after(15):
        async with trio_mcp.open_stdio_client(FAULTY, protocol_version="2025-11-25", stderr=lines.append) as client:
            for tool, arguments in CRASHERS:
                assert (await client.call_tool(tool, arguments)).is_error is True
            result = await client.call_tool("explode", {"kind": "Exception"})
            assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"
    error_id = text_of(result).rsplit("error id ", 1)[1].strip(").")
    logged = "\n".join(lines)
    assert error_id in logged and "Traceback" in logged and "hunter2" in logged  # the operator sees it all


async def test_client_callbacks_that_fail_answer_the_server_and_the_session_lives_on() -> None:
    from trio_mcp.types import CreateMessageRequestParams, CreateMessageResult

    class Custom(BaseException):
        pass

    async def sampling(params: CreateMessageRequestParams) -> CreateMessageResult:
        raise Custom("the model is on fire: api_key=sk-123")

    def on_log(params: Any) -> None:
        raise SystemExit("a notification callback exits")

    with trio.fail_after(15):
        async with trio_mcp.open_stdio_client(
            FAULTY, protocol_version="2025-11-25", stderr="capture", sampling=sampling, on_log=on_log
        ) as client:
            text = text_of(await client.call_tool("ask_model"))
            assert text.startswith("sampling failed: -32603 Internal error: the handler for sampling/createMessage")
            assert "sk-123" not in text
            assert text_of(await client.call_tool("log_then_return", {"n": 2})) == "logged"  # on_log raised twice
            assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"


async def test_a_failing_completion_handler_is_a_generic_error(open_faulty: Any) -> None:
    from trio_mcp.types import CompletionArgument, PromptReference

    with trio.fail_after(15):
        async with open_faulty() as client:
            with pytest.raises(trio_mcp.McpError) as info:
                await client.complete(PromptReference(name="greet"), CompletionArgument(name="name", value="x"))
            assert info.value.code == -32603 and "error id" in info.value.message
            assert text_of(await client.call_tool("echo", {"text": "alive"})) == "alive"


def _conversation() -> bytes:
    import json

    messages: list[dict[str, Any]] = [initialize_request(id=1), INITIALIZED]
    calls = [
        ("nap", {"seconds": 5}),
        *CRASHERS,
        ("own_deadline", {}),
        ("log_then_return", {"n": 3}),
        ("echo", {"text": "x"}),
    ]
    for index, (tool, arguments) in enumerate(calls, start=2):
        messages.append(
            {"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        )
    messages.append({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
    return b"".join(json.dumps(message).encode() + b"\n" for message in messages)


CONVERSATION = _conversation()


@pytest.mark.parametrize("seed", range(8))
async def test_a_peer_vanishing_at_any_point_ends_the_stdio_server_cleanly(seed: int) -> None:
    """The client writes part of a conversation full of failing calls, then closes the pipe mid-anything."""
    import os
    import random
    import subprocess

    cut = random.Random(seed).randrange(len(CONVERSATION) + 1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with trio.fail_after(15):
        process = await trio.lowlevel.open_process(
            FAULTY, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
        )
        assert process.stdin is not None and process.stderr is not None
        try:
            await process.stdin.send_all(CONVERSATION[:cut])
            await trio.sleep(random.Random(seed).random() * 0.2)
            await process.stdin.aclose()
            stderr = b""
            while chunk := await process.stderr.receive_some(65536):
                stderr += chunk
            await process.wait()
        finally:
            process.kill()
    text = stderr.decode()
    assert process.returncode == 0, text
    # Only the handler failures the server logs on purpose, never an unhandled traceback.
    assert "ExceptionGroup" not in text and "Unhandled" not in text
    assert "Traceback" not in text or "failed (error id" in text
