"""Interoperability over stdio with peers nobody here wrote.

- trio_mcp's client against ``@modelcontextprotocol/server-everything`` (TypeScript SDK), run with Node >= 22;
- trio_mcp's client against a server built on the official Python SDK (tests/interop/official_stdio_server.py);
- the official Python SDK's client (tests/interop/official_stdio_client.py) against trio_mcp's server
  (tests/servers/stdio_server.py).

The peers come from ``bash tests/interop/setup.sh``, which pins them and writes ``.interop/paths.json``. Without
that file this module is skipped. NOTE: CI runs the set-up before the tests, so a skip of this module in CI means
the set-up failed or was not run: treat it as a failure, not as a pass.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from paths import ROOT
from peers import cancel_after_first_progress

import trio_mcp
from trio_mcp.transports.stdio import StdioProcess
from trio_mcp.types import ProgressNotificationParams, Root, TextContent

pytestmark = pytest.mark.interop

REPO = ROOT
PATHS_FILE = REPO / ".interop" / "paths.json"
INTEROP = REPO / "tests" / "interop"
LEGACY_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]


def _load_paths() -> dict[str, str]:
    reason = f"interop peers are not installed ({PATHS_FILE} {{}}); run `bash tests/interop/setup.sh` first"
    try:
        paths: dict[str, str] = json.loads(PATHS_FILE.read_text())
    except FileNotFoundError:
        pytest.skip(reason.format("is missing"), allow_module_level=True)
    for key in ("node", "server_everything", "mcp_python"):
        if not os.path.exists(paths.get(key, "")):
            pytest.skip(reason.format(f"names {key}={paths.get(key)!r}, which does not exist"), allow_module_level=True)
    return paths


PATHS = _load_paths()
EVERYTHING = [PATHS["node"], PATHS["server_everything"], "stdio"]
OFFICIAL_SERVER = [PATHS["mcp_python"], str(INTEROP / "official_stdio_server.py")]
OFFICIAL_CLIENT = [PATHS["mcp_python"], str(INTEROP / "official_stdio_client.py")]
OUR_SERVER = [sys.executable, str(REPO / "tests" / "servers" / "stdio_server.py")]


def texts(result: Any) -> list[str]:
    return [block.text for block in result.content if isinstance(block, TextContent)]


# -- our client against server-everything (TypeScript SDK) ----------------------------------------------------------


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_everything_handshake(version: str) -> None:
    with trio.fail_after(30):
        async with trio_mcp.open_stdio_client(EVERYTHING, stderr="capture", protocol_version=version) as client:
            assert client.protocol_version == version
            assert client.server_info.name == "mcp-servers/everything"
            assert client.server_info.version
            assert client.server_capabilities.tools is not None
            await client.ping()


@pytest.mark.parametrize("with_roots", [False, True])
async def test_everything_exits_cleanly_when_the_client_closes(
    with_roots: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # server-everything asks a client that declared roots for them 350 ms after the handshake. A client that
    # closed its end of stdout at once made that write die of EPIPE (exit status 1, a stack trace).
    monkeypatch.setattr(StdioProcess, "shutdown_grace", 1.0)

    async def roots() -> list[Root]:
        return []  # pragma: no cover - the client is closed before the server asks

    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            process = await StdioProcess.start(nursery, EVERYTHING, stderr="capture")
            client = await trio_mcp.connect_client(
                nursery, process.stream, protocol_version="2025-11-25", roots=roots if with_roots else None
            )
            client.add_close_callback(process.aclose)
            await client.ping()
            await client.aclose()
    assert "EPIPE" not in process.stderr_tail
    # With roots, it still waits for the answer to the roots/list it sent after its stdin closed, so it
    # outlives the grace period and is stopped by SIGTERM; without, it exits by itself.
    assert process.process.returncode == (-signal.SIGTERM if with_roots else 0), process.stderr_tail


async def test_everything_tools_progress_and_cancel() -> None:
    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(EVERYTHING, stderr="capture") as client:
            assert client.protocol_version == "2025-11-25"
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"echo", "get-sum", "trigger-long-running-operation"} <= tools.keys()
            assert tools["echo"].input_schema["properties"]["message"]["type"] == "string"

            result = await client.call_tool("echo", {"message": "héllo \u2603"})
            assert not result.is_error
            assert texts(result) == ["Echo: héllo \u2603"]

            updates: list[ProgressNotificationParams] = []
            result = await client.call_tool(
                "trigger-long-running-operation", {"duration": 0.5, "steps": 5}, on_progress=updates.append
            )
            assert not result.is_error
            assert "Steps: 5" in texts(result)[0]
            assert [(u.progress, u.total) for u in updates] == [(i, 5) for i in range(1, 6)]

            # Abandon a 3 s call after its first update; the peer keeps sending progress for it for a while,
            # which the client must drop, and the connection must stay usable.
            cancelled = await cancel_after_first_progress(
                client, "trigger-long-running-operation", {"duration": 3, "steps": 6}
            )
            assert cancelled[0].progress == 1
            await trio.sleep(1.2)
            await client.ping()
            result = await client.call_tool("get-sum", {"a": 2, "b": 3})
            assert texts(result) == ["The sum of 2 and 3 is 5."]

            # Unknown tools: the TypeScript SDK answers with an isError result or a JSON-RPC error.
            try:
                bad = await client.call_tool("no-such-tool", {})
            except trio_mcp.McpError as exc:
                assert exc.code == -32602
            else:
                assert bad.is_error


async def test_everything_content_kinds_structured_output_and_roots() -> None:
    """Every kind of content block the reference server returns parses; it asks our client for roots."""

    async def roots() -> list[Root]:
        return [Root(uri="file:///tmp/interop-root", name="interop")]

    with trio.fail_after(30):
        async with trio_mcp.open_stdio_client(EVERYTHING, stderr="capture", roots=roots) as client:
            kinds = {}
            for name, arguments in [
                ("get-tiny-image", {}),
                ("get-annotated-message", {"messageType": "error", "includeImage": True}),
                ("get-resource-links", {"count": 2}),
                ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
                ("get-resource-reference", {"resourceType": "Blob", "resourceId": 2}),
            ]:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, (name, result)
                kinds[name, arguments.get("resourceType")] = [type(block).__name__ for block in result.content]
            assert "ImageContent" in kinds["get-tiny-image", None]
            annotated = (await client.call_tool("get-annotated-message", {"messageType": "error"})).content[0]
            assert annotated.annotations is not None and annotated.annotations.priority == 1
            assert kinds["get-resource-links", None].count("ResourceLink") == 2
            assert "EmbeddedResource" in kinds["get-resource-reference", "Text"]
            assert "EmbeddedResource" in kinds["get-resource-reference", "Blob"]

            result = await client.call_tool("get-structured-content", {"location": "Chicago"})
            assert isinstance(result.structured_content, dict)
            assert json.loads(texts(result)[0]) == result.structured_content

            result = await client.call_tool("get-roots-list", {})
            assert "file:///tmp/interop-root" in texts(result)[0]
            await client.notify_roots_changed()  # the server asks again; the client must answer
            await client.ping()


# -- our client against the official Python SDK's server -----------------------------------------------------------


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_official_server_handshake(version: str) -> None:
    with trio.fail_after(30):
        async with trio_mcp.open_stdio_client(OFFICIAL_SERVER, stderr="capture", protocol_version=version) as client:
            assert client.protocol_version == version
            assert client.server_info.name == "official-stdio-server"
            assert client.server_info.version == "1.0.0"
            assert client.instructions == "interop peer for trio_mcp"
            assert client.server_capabilities.tools is not None
            await client.ping()
            result = await client.call_tool("echo", {"text": "hi"})
            assert texts(result) == ["hi"]


async def test_official_server_tools_progress_cancel_and_errors() -> None:
    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(OFFICIAL_SERVER, stderr="capture") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"echo", "add", "slow", "list_roots"} <= tools.keys()
            assert tools["add"].input_schema["properties"]["a"]["type"] == "integer"
            assert tools["add"].output_schema is not None

            result = await client.call_tool("echo", {"text": "héllo \u2603"})
            assert texts(result) == ["héllo \u2603"]
            assert not result.is_error

            result = await client.call_tool("add", {"a": 2, "b": 40})
            assert not result.is_error
            assert result.structured_content == {"result": 42}
            assert texts(result) == ["42"]

            updates: list[ProgressNotificationParams] = []
            result = await client.call_tool("slow", {"seconds": 0.5}, on_progress=updates.append)
            assert texts(result) == ["slept 0.5"]
            assert [(u.progress, u.total) for u in updates] == [(i, 5) for i in range(1, 6)]
            assert updates[-1].message == "step 5/5"

            cancelled = await cancel_after_first_progress(client, "slow", {"seconds": 30})
            assert cancelled[0].progress == 1
            await trio.sleep(0.3)
            await client.ping()
            assert texts(await client.call_tool("add", {"a": 1, "b": 1})) == ["2"]

            # Arguments that fail validation, and unknown tools: mcp 2.3.0 answers both with isError results
            # (the 2025-11-25 spec also allows a JSON-RPC error for an unknown tool, which is what trio_mcp sends).
            bad = await client.call_tool("add", {"a": "x", "b": 1})
            assert bad.is_error
            try:
                unknown = await client.call_tool("no_such_tool", {})
            except trio_mcp.McpError as exc:
                assert exc.code == -32602
            else:
                assert unknown.is_error
                assert "no_such_tool" in texts(unknown)[0]
            # Protocol errors proper. (mcp 2.3.0 answers an unknown prompt with error code 0, so that is not used.)
            with pytest.raises(trio_mcp.McpError) as info:
                await client.request("resources/read", {"uri": "file:///no/such/resource"})
            assert info.value.code in (-32002, -32602)  # "resource not found": 2025-11-25 and later revisions
            with pytest.raises(trio_mcp.McpError) as info:
                await client.request("no/such/method")
            assert info.value.code == -32601
            assert texts(await client.call_tool("echo", {"text": "still serving"})) == ["still serving"]


async def test_official_server_asks_our_client_for_roots() -> None:
    async def roots() -> list[Root]:
        return [Root(uri="file:///tmp/a", name="a"), Root(uri="file:///tmp/b")]

    with trio.fail_after(30):
        # Server-initiated requests need the legacy era's back channel: pin it.
        async with trio_mcp.open_stdio_client(
            OFFICIAL_SERVER, stderr="capture", roots=roots, protocol_version="2025-11-25"
        ) as client:
            result = await client.call_tool("list_roots", {})
            assert not result.is_error, texts(result)
            assert texts(result) == ["file:///tmp/a,file:///tmp/b"]


async def test_our_client_probes_the_official_server_into_the_modern_era() -> None:
    """mcp 2.3.0 speaks 2026-07-28 too: our default probe (server/discover) must find that and use it."""
    with trio.fail_after(30):
        async with trio_mcp.open_stdio_client(OFFICIAL_SERVER, stderr="capture") as client:
            assert client.era == "modern" and client.protocol_version == "2026-07-28"
            assert client.server_info.name == "official-stdio-server"
            assert client.server_capabilities.tools is not None
            result = await client.call_tool("add", {"a": 2, "b": 40})
            assert result.structured_content == {"result": 42}
            updates: list[ProgressNotificationParams] = []
            result = await client.call_tool("slow", {"seconds": 0.5}, on_progress=updates.append)
            assert texts(result) == ["slept 0.5"] and updates
            await client.ping()  # server/discover stands in for ping on 2026-07-28


async def test_our_client_falls_back_to_initialize_with_server_everything() -> None:
    with trio.fail_after(30):
        async with trio_mcp.open_stdio_client(EVERYTHING, stderr="capture") as client:
            assert client.era == "legacy" and client.protocol_version == "2025-11-25"


# -- the official Python SDK's client against our server ------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_official_client_against_our_server(mode: str, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with trio.fail_after(60):
        done = await trio.run_process(
            [*OFFICIAL_CLIENT, "--mode", mode, "--marker", str(marker), "--", *OUR_SERVER],
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

    # Probing with server/discover ("auto") finds our server modern: the whole exchange then runs on the
    # modern revision, roots included (as a multi round-trip request). "legacy" goes through initialize.
    if mode == "auto":
        assert out["protocol_version"] == "2026-07-28"
        assert out["ping"]["code"] == -32601  # ping does not exist on 2026-07-28
    else:
        assert out["protocol_version"] == "2025-11-25"
        assert out["ping"] is True
    assert out["server_info"] == {"name": "stdio-test-server", "version": "9.9.9"}
    assert out["has_tools_capability"] is True
    assert {"echo", "sleep", "count", "roots_probe", "fail"} <= set(out["tools"])
    assert out["echo"] == {"texts": ["hello from the official SDK"], "is_error": False, "structured": None}

    count = out["count"]
    assert count["is_error"] is False
    assert count["structured"] == {"result": 5}
    assert [(u["progress"], u["total"], u["message"]) for u in count["progress"]] == [
        (i, 5, f"step {i}") for i in range(1, 6)
    ]

    assert out["roots_probe"] == {"texts": ["file:///tmp/interop-root"], "is_error": False}
    assert out["roots_requested"] is True
    assert out["fail"]["is_error"] is True
    # An unexpected exception reaches the model as a failure with an error id, never with its own text.
    assert "Tool fail failed (error id " in out["fail"]["texts"][0]
    assert "the tool broke" not in out["fail"]["texts"][0]
    assert out["unknown_tool"]["code"] == -32602

    # The SDK sends notifications/cancelled when its caller abandons a call; our tool must see it.
    assert out["cancel"]["cancelled_client_side"] is True
    events = [line.split()[0] for line in marker.read_text().splitlines()]
    assert events == ["start", "cancelled"]
    assert out["echo_after_cancel"] == out["echo"]
