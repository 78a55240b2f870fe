"""The ``trio-mcp`` command line against ``@modelcontextprotocol/server-everything`` (TypeScript SDK), over stdio.

Needs the interop set-up (``bash tests/interop/setup.sh``), like tests/interop/test_interop_stdio.py.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import trio
from cli_helpers import REPO, run_cli, start

pytestmark = pytest.mark.interop

PATHS_FILE = REPO / ".interop" / "paths.json"


def _everything() -> list[str]:
    try:
        paths = json.loads(PATHS_FILE.read_text())
    except FileNotFoundError:
        pytest.skip(
            f"interop peers are not installed ({PATHS_FILE} is missing); run `bash tests/interop/setup.sh`",
            allow_module_level=True,
        )
    if not all(os.path.exists(paths.get(key, "")) for key in ("node", "server_everything")):
        pytest.skip("interop peers are not installed; run `bash tests/interop/setup.sh`", allow_module_level=True)
    return ["--", paths["node"], paths["server_everything"], "stdio"]


EVERYTHING = _everything()


async def test_info_and_list() -> None:
    out = await run_cli("info", "--json", *EVERYTHING)
    assert out.status == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["serverInfo"]["name"] == "mcp-servers/everything"
    assert info["era"] == "legacy" and info["protocolVersion"] == "2025-11-25"
    out = await run_cli("list", "tools", *EVERYTHING)
    assert "get-sum  — Returns the sum of two numbers" in out.stdout
    assert "a: number (required)" in out.stdout
    out = await run_cli("list", "prompts", "--json", *EVERYTHING)
    assert any(prompt["name"] == "simple-prompt" for prompt in json.loads(out.stdout))


async def test_call_converts_numbers_and_shows_progress() -> None:
    out = await run_cli("call", "get-sum", "a=2", "b=3.5", *EVERYTHING)
    assert out.status == 0, out.stderr
    assert "5.5" in out.stdout
    out = await run_cli("call", "trigger-long-running-operation", "duration=0.3", "steps=3", *EVERYTHING)
    assert out.status == 0, out.stderr
    assert "progress 1/3" in out.stderr and "progress 3/3" in out.stderr
    out = await run_cli("call", "echo", "message=123", "--json", *EVERYTHING)  # a string property keeps "123"
    assert json.loads(out.stdout)["content"][0]["text"] == "Echo: 123"


async def test_read_and_prompt() -> None:
    out = await run_cli("read", "demo://resource/static/document/architecture.md", *EVERYTHING)
    assert out.status == 0, out.stderr
    assert out.stdout.strip()
    out = await run_cli("prompt", "args-prompt", "city=Paris", *EVERYTHING)
    assert out.status == 0, out.stderr
    assert "Paris" in out.stdout


async def test_ctrl_c_during_a_long_call(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            running = await start(
                nursery, "call", "trigger-long-running-operation", "duration=20", "steps=20", *EVERYTHING
            )
            await running.wait_for_stderr(r"progress 1/20")
            running.process.send_signal(signal.SIGINT)
            status = await running.process.wait()
    assert status == 130
    assert "Traceback" not in running.stderr.decode()


async def test_proxy_serves_server_everything_as_a_stateless_server() -> None:
    from trio_mcp.proxy import open_proxy
    from trio_mcp.testing import open_in_memory
    from trio_mcp.types import ProgressNotificationParams

    updates: list[ProgressNotificationParams] = []
    with trio.fail_after(30):
        async with (
            open_proxy(EVERYTHING[1:], stderr="capture") as server,
            open_in_memory(server, protocol_version="2026-07-28") as client,
        ):
            assert client.era == "modern" and client.server_info.name == "mcp-servers/everything"
            result = await client.call_tool("get-sum", {"a": 2, "b": 5})
            assert "7" in str(result.content[0])
            await client.call_tool(
                "trigger-long-running-operation", {"duration": 0.3, "steps": 3}, on_progress=updates.append
            )
    assert [update.progress for update in updates] == [1, 2, 3]


async def test_proxy_forwards_prompts_and_completion_from_server_everything() -> None:
    from trio_mcp.proxy import open_proxy
    from trio_mcp.testing import open_in_memory
    from trio_mcp.types import CompletionArgument, PromptReference

    with trio.fail_after(30):
        async with (
            open_proxy(EVERYTHING[1:], stderr="capture") as server,
            open_in_memory(server, protocol_version="2025-11-25") as client,
        ):
            prompt = await client.get_prompt("args-prompt", {"city": "Lyon"})
            assert "Lyon" in str(prompt.messages[0].content)
            done = await client.complete(
                PromptReference(name="completable-prompt"), CompletionArgument(name="department", value="En")
            )
            assert done.completion.values == ["Engineering"]
