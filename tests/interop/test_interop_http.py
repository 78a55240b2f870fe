"""Interoperability over HTTP with peers nobody here wrote.

- trio_mcp's HTTP client (``open_http_client``) against a server built on the official Python SDK
  (tests/interop/official_http_server.py, mcp from .interop/mcp-venv): Streamable HTTP with the default era
  probe ("auto", which finds 2026-07-28) and pinned to 2025-11-25, and the 2024-11-05 HTTP+SSE transport;
- trio_mcp's HTTP client against ``@modelcontextprotocol/server-everything`` (TypeScript SDK) in its
  ``streamableHttp`` mode;
- the official Python SDK's client (tests/interop/official_http_client.py) against a trio_mcp server served
  in this process with ``Server.serve_http``: Streamable HTTP ("auto" and "legacy") and HTTP+SSE (``/sse``).

Each exercises tools, progress, cancellation, and the sampling and elicitation callbacks (and roots where the
peer asks for them). Peer processes get a free 127.0.0.1 port, are stopped by their pid, and every wait is
bounded. server-everything has no host setting (``app.listen(PORT)`` binds every interface), so it is started
with a Node preload (``--import data:...``, below) that makes any ``listen(port)`` bind 127.0.0.1 and report the
address it got; the test checks that address before connecting.

The peers come from ``bash tests/interop/setup.sh``, which pins them and writes ``.interop/paths.json``. Without
that file this module is skipped. NOTE: CI runs the set-up before the tests, so a skip of this module in CI means
the set-up failed or was not run: treat it as a failure, not as a pass.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from paths import ROOT
from peers import cancel_after_first_progress

import trio_mcp
from trio_mcp import Context, Server
from trio_mcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ProgressNotificationParams,
    Root,
    TextContent,
)

pytestmark = pytest.mark.interop

REPO = ROOT
PATHS_FILE = REPO / ".interop" / "paths.json"
INTEROP = REPO / "tests" / "interop"

if not PATHS_FILE.exists():
    pytest.skip(
        f"interop peers are not installed ({PATHS_FILE} is missing); run `bash tests/interop/setup.sh` first",
        allow_module_level=True,
    )
PATHS: dict[str, str] = json.loads(PATHS_FILE.read_text())

STARTUP_TIMEOUT = 20.0
STOP_TIMEOUT = 10.0

#: Node preload for server-everything: every ``server.listen(port[, callback])`` binds 127.0.0.1 instead of all
#: interfaces, and the bound address is written to stderr as ``interop-bound {json}``.
LOOPBACK_PRELOAD = (
    "data:text/javascript,import net from 'node:net';"
    "const listen=net.Server.prototype.listen;"
    "net.Server.prototype.listen=function(...a){"
    "if((typeof a[0]==='number'||typeof a[0]==='string')&&typeof a[1]!=='string'){a.splice(1,0,'127.0.0.1')}"
    "this.once('listening',()=>process.stderr.write('interop-bound '+JSON.stringify(this.address())+'\\n'));"
    "return listen.apply(this,a)};"
)


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


@asynccontextmanager
async def peer_process(
    command: list[str], logs: Path, ready: str, *, env: dict[str, str] | None = None, stop: int = signal.SIGINT
) -> AsyncIterator[re.Match[str]]:
    """Start a peer with stdout and stderr going to files under ``logs``, wait (bounded) for a line matching
    ``ready`` in either, yield the match, then stop the process by its pid (``stop``, SIGKILL if it lingers)."""
    logs.mkdir(parents=True, exist_ok=True)
    out_path, err_path = logs / "stdout.txt", logs / "stderr.txt"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = await trio.lowlevel.open_process(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            cwd=str(REPO),
            env={**os.environ, **(env or {})},
        )
    try:
        match = None
        with trio.move_on_after(STARTUP_TIMEOUT):
            while match is None:
                if process.poll() is not None:
                    break
                found = re.search(ready, out_path.read_text(errors="replace") + err_path.read_text(errors="replace"))
                if found is None:
                    await trio.sleep(0.05)
                match = found
        if match is None:
            raise AssertionError(
                f"{command[1]} did not start (exit status {process.poll()}):\n"
                f"{out_path.read_text(errors='replace')}\n{err_path.read_text(errors='replace')}"
            )
        yield match
    finally:
        with trio.CancelScope(shield=True):
            if process.poll() is None:
                process.send_signal(stop)
                with trio.move_on_after(STOP_TIMEOUT):
                    await process.wait()
                if process.poll() is None:
                    process.kill()
                    await process.wait()


async def wait_for_lines(path: Path, expected: list[str], timeout: float = 10.0) -> list[str]:
    """The first words of the lines of ``path`` once they are ``expected`` (or whatever is there after ``timeout``)."""
    events: list[str] = []
    with trio.move_on_after(timeout):
        while True:
            events = [line.split()[0] for line in path.read_text().splitlines()] if path.exists() else []
            if events == expected:
                break
            await trio.sleep(0.05)
    return events


# Callbacks of our client: an "accept" form answer, a canned model reply, one root.


async def elicit(params: ElicitRequestParams) -> ElicitResult:
    assert isinstance(params, ElicitRequestFormParams)
    given = {"name": "Ada", "check": True, "email": "ada@example.com"}
    content = {key: value for key, value in given.items() if key in params.requested_schema.get("properties", {})}
    return ElicitResult(action="accept", content=trio_mcp.fill_elicitation_defaults(params.requested_schema, content))


async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
    prompt = params.messages[0].content
    text = prompt.text if isinstance(prompt, TextContent) else "?"
    return CreateMessageResult(role="assistant", content=TextContent(text=f"model: {text}"), model="interop-model")


async def roots() -> list[Root]:
    return [Root(uri="file:///tmp/interop-http-root", name="interop")]


# -- our client against the official Python SDK's server ----------------------------------------------------------


@asynccontextmanager
async def official_server(tmp_path: Path) -> AsyncIterator[tuple[str, Path]]:
    """The official SDK's server on a free port: yields its base URL and its cancellation marker file."""
    marker = tmp_path / "marker"
    command = [PATHS["mcp_python"], str(INTEROP / "official_http_server.py"), "--marker", str(marker)]
    async with peer_process(command, tmp_path / "official", r"serving (http://127\.0\.0\.1:\d+)\n") as match:
        yield match.group(1), marker


@pytest.mark.parametrize(
    ("version", "era", "negotiated"),
    [("auto", "modern", "2026-07-28"), ("2025-11-25", "legacy", "2025-11-25")],
)
async def test_our_client_against_official_streamable_http(
    version: str, era: str, negotiated: str, tmp_path: Path
) -> None:
    with trio.fail_after(40):
        async with (
            official_server(tmp_path) as (base, marker),
            trio_mcp.open_http_client(
                f"{base}/mcp", protocol_version=version, elicitation=elicit, sampling=sample
            ) as client,
        ):
            assert (client.era, client.protocol_version) == (era, negotiated)
            assert client.server_info.name == "official-http-server"
            assert client.server_capabilities.tools is not None
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"echo", "add", "slow", "greet", "ask_model"} <= tools.keys()

            assert texts(await client.call_tool("echo", {"text": "héllo \u2603"})) == ["héllo \u2603"]
            result = await client.call_tool("add", {"a": 2, "b": 40})
            assert (result.structured_content, texts(result)) == ({"result": 42}, ["42"])

            updates: list[ProgressNotificationParams] = []
            result = await client.call_tool("slow", {"seconds": 0.5}, on_progress=updates.append)
            assert texts(result) == ["slept 0.5"]
            assert [(u.progress, u.total) for u in updates] == [(i, 5) for i in range(1, 6)]

            # The SDK's resolvers: a server request on 2025-11-25, an InputRequiredResult round on 2026-07-28.
            assert texts(await client.call_tool("greet", {})) == ["Hello, Ada!"]
            assert texts(await client.call_tool("ask_model", {"topic": "trio"})) == ["model: One sentence about trio"]

            marker.unlink(missing_ok=True)
            cancelled = await cancel_after_first_progress(client, "slow", {"seconds": 30})
            assert cancelled[0].progress == 1
            # notifications/cancelled (2025-11-25) or the closed response (2026-07-28) reaches the tool.
            assert await wait_for_lines(marker, ["start", "cancelled"]) == ["start", "cancelled"]
            await client.ping()
            assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == ["2"]


async def test_our_client_against_official_http_sse(tmp_path: Path) -> None:
    """The 2024-11-05 HTTP+SSE transport: pinned, and found by "auto" after Streamable HTTP is refused."""
    with trio.fail_after(40):
        async with official_server(tmp_path) as (base, marker):
            for version in ("2024-11-05", "auto"):
                async with trio_mcp.open_http_client(
                    f"{base}/sse", protocol_version=version, sampling=sample
                ) as client:
                    assert (client.era, client.protocol_version) == ("legacy", "2024-11-05"), version
                    assert client.server_info.name == "official-http-server"
                    assert texts(await client.call_tool("echo", {"text": "over sse"})) == ["over sse"]
                    updates: list[ProgressNotificationParams] = []
                    result = await client.call_tool("slow", {"seconds": 0.3}, on_progress=updates.append)
                    assert texts(result) == ["slept 0.3"] and len(updates) == 3
                    assert texts(await client.call_tool("ask_model", {"topic": "sse"})) == [
                        "model: One sentence about sse"
                    ]
            marker.unlink(missing_ok=True)
            async with trio_mcp.open_http_client(f"{base}/sse", protocol_version="2024-11-05") as client:
                await cancel_after_first_progress(client, "slow", {"seconds": 30})
                assert await wait_for_lines(marker, ["start", "cancelled"]) == ["start", "cancelled"]
                await client.ping()


# -- our client against server-everything (TypeScript SDK) -----------------------------------------------------------


@asynccontextmanager
async def everything_server(tmp_path: Path) -> AsyncIterator[str]:
    """server-everything in streamableHttp mode, bound to 127.0.0.1 on a free port: yields its /mcp URL."""
    command = [PATHS["node"], "--import", LOOPBACK_PRELOAD, PATHS["server_everything"], "streamableHttp"]
    async with peer_process(command, tmp_path / "everything", r"interop-bound (\{.*\})\n", env={"PORT": "0"}) as match:
        address = json.loads(match.group(1))
        assert address["address"] == "127.0.0.1", f"server-everything must listen on loopback only: {address}"
        yield f"http://127.0.0.1:{address['port']}/mcp"


async def list_tool_names(client: trio_mcp.Client, needed: set[str]) -> set[str]:
    """server-everything registers its capability-dependent tools once initialized; list until they show."""
    names: set[str] = set()
    with trio.move_on_after(5):
        while not needed <= names:
            names = {tool.name for tool in (await client.list_tools()).tools}
            if not needed <= names:
                await trio.sleep(0.1)
    return names


async def test_our_client_against_everything_streamable_http(tmp_path: Path) -> None:
    with trio.fail_after(40):
        async with everything_server(tmp_path) as url:
            # "auto": server/discover without a session gets the SDK's plain 400, so: initialize.
            async with trio_mcp.open_http_client(url, elicitation=elicit, sampling=sample, roots=roots) as client:
                assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
                assert client.server_info.name == "mcp-servers/everything"
                needed = {
                    "echo",
                    "get-sum",
                    "trigger-long-running-operation",
                    "trigger-sampling-request",
                    "trigger-elicitation-request",
                    "get-roots-list",
                }
                assert needed <= await list_tool_names(client, needed)

                assert texts(await client.call_tool("echo", {"message": "héllo \u2603"})) == ["Echo: héllo \u2603"]
                assert texts(await client.call_tool("get-sum", {"a": 2, "b": 3})) == ["The sum of 2 and 3 is 5."]

                updates: list[ProgressNotificationParams] = []
                result = await client.call_tool(
                    "trigger-long-running-operation", {"duration": 0.5, "steps": 5}, on_progress=updates.append
                )
                assert "Steps: 5" in texts(result)[0]
                assert [(u.progress, u.total) for u in updates] == [(i, 5) for i in range(1, 6)]

                sampled = texts(await client.call_tool("trigger-sampling-request", {"prompt": "hi"}))
                assert "model: Resource trigger-sampling-request context: hi" in sampled[0]
                elicited = "\n".join(texts(await client.call_tool("trigger-elicitation-request", {})))
                assert "- Name: Ada" in elicited and '"firstLine": "It was a dark and stormy night."' in elicited
                assert "file:///tmp/interop-http-root" in texts(await client.call_tool("get-roots-list", {}))[0]

                # Abandon a 3 s call after its first update: the peer may go on sending progress for it, which
                # the client must drop, and the session must stay usable.
                cancelled = await cancel_after_first_progress(
                    client, "trigger-long-running-operation", {"duration": 3, "steps": 6}
                )
                assert cancelled[0].progress == 1
                await trio.sleep(1.2)
                await client.ping()
                assert texts(await client.call_tool("get-sum", {"a": 1, "b": 1})) == ["The sum of 1 and 1 is 2."]

            for version in ("2025-03-26", "2025-06-18"):
                async with trio_mcp.open_http_client(url, protocol_version=version) as client:
                    assert client.protocol_version == version
                    assert texts(await client.call_tool("echo", {"message": version})) == [f"Echo: {version}"]


# -- the official Python SDK's client against our server ------------------------------------------------------------


def our_server(seen: dict[str, trio.Event]) -> Server:
    server = Server("trio-mcp-http-interop", version="4.5.6")

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def count(steps: int, ctx: Context) -> int:
        """Report progress once per step."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, total=steps, message=f"step {step}")
            await trio.sleep(0.01)
        return steps

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep; the test learns whether the call started and whether it was cancelled."""
        seen["sleep started"].set()
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            seen["sleep cancelled"].set()
            raise
        return "slept"

    @server.tool()
    async def roots_probe(ctx: Context) -> str:
        """Ask the client for its roots."""
        return ",".join(root.uri for root in await ctx.list_roots(timeout=10))

    @server.tool()
    async def sample(prompt: str, ctx: Context) -> str:
        """Ask the client's model."""
        result = await ctx.sample(prompt, max_tokens=50, timeout=10)
        return result.content.text if isinstance(result.content, TextContent) else "?"

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the user for a name and an age."""
        schema = {
            "type": "object",
            "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
            "required": ["name"],
        }
        result = await ctx.elicit("Who are you?", schema, timeout=10)
        return f"{result.action}: {json.dumps(result.content, sort_keys=True)}"

    @server.tool()
    def fail() -> str:
        """Raise, to become an isError result."""
        raise RuntimeError("the tool broke")

    return server


@pytest.mark.parametrize(
    ("transport", "mode", "path", "negotiated"),
    [
        ("streamable", "auto", "/mcp", "2026-07-28"),
        ("streamable", "legacy", "/mcp", "2025-11-25"),
        ("sse", "legacy", "/sse", "2025-11-25"),  # the SDK negotiates its newest legacy revision over HTTP+SSE too
    ],
)
async def test_official_client_against_our_server(
    transport: str, mode: str, path: str, negotiated: str, nursery: trio.Nursery
) -> None:
    seen = {name: trio.Event() for name in ("sleep started", "sleep cancelled")}
    port = await nursery.start(our_server(seen).serve_http, "127.0.0.1", 0)
    with trio.fail_after(60):
        done = await trio.run_process(
            [
                PATHS["mcp_python"],
                str(INTEROP / "official_http_client.py"),
                "--url",
                f"http://127.0.0.1:{port}{path}",
                "--transport",
                transport,
                "--mode",
                mode,
            ],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=str(REPO),
        )
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 0, stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1, (lines, stderr)
    out = json.loads(lines[0])
    assert "connect" not in out, (out, stderr)

    assert out["protocol_version"] == negotiated
    assert out["server_info"] == {"name": "trio-mcp-http-interop", "version": "4.5.6"}
    assert out["has_tools_capability"] is True
    assert out["tools"] == ["ask", "count", "echo", "fail", "roots_probe", "sample", "sleep"]
    assert out["echo"] == {"texts": ["hello over HTTP"], "is_error": False, "structured": None}
    assert out["count"]["structured"] == {"result": 5}
    assert [(u["progress"], u["total"], u["message"]) for u in out["count"]["progress"]] == [
        (i, 5, f"step {i}") for i in range(1, 6)
    ]
    # Server-to-client requests: standalone requests on the legacy revisions, InputRequiredResult rounds on
    # 2026-07-28; the SDK answers both with the same callbacks.
    assert out["roots_probe"]["texts"] == ["file:///tmp/interop-http-root"], out["roots_probe"]
    assert out["sample"]["texts"] == ["sampled: what is trio?"], out["sample"]
    assert out["ask"]["texts"] == ['accept: {"age": 36, "name": "Ada"}'], out["ask"]
    assert sorted(set(out["callbacks"])) == ["elicitation", "roots", "sampling"]
    assert out["fail"]["is_error"] is True and "Tool fail failed (error id " in out["fail"]["texts"][0]
    assert "the tool broke" not in out["fail"]["texts"][0]
    assert out["unknown_tool"].get("code") == -32602 or out["unknown_tool"].get("is_error") is True

    # Abandoning the call (notifications/cancelled, or on 2026-07-28 closing its response) cancels our tool.
    assert out["cancel"]["cancelled_client_side"] is True
    assert seen["sleep started"].is_set()
    with trio.move_on_after(5):
        await seen["sleep cancelled"].wait()
    assert seen["sleep cancelled"].is_set(), "the SDK abandoned the call but the tool was not cancelled"
    assert out["echo_after_cancel"] == out["echo"]
