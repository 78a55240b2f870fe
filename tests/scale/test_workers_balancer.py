"""Several machines behind a balancer, modern era: two independent servers (each its own supervisor, as two
machines would run them) behind a real HAProxy balancing every request round robin, without stickiness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
from scale_peers import haproxy, supervisor

import trio_mcp
from trio_mcp.types import ElicitResult

MODERN = "2026-07-28"
SHARED = {"TRIO_MCP_SECRET_KEY": "one key for every machine, 32+ characters long"}


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


async def greet_through(url: str, asked_by: list[int]) -> Any:
    async def answer(params: Any) -> ElicitResult:
        asked_by.append(int(params.message.split()[2].rstrip(":")))
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with trio_mcp.open_http_client(url, protocol_version=MODERN, elicitation=answer) as client:
        return await client.call_tool("greet", {})


async def test_requests_and_elicitation_retries_cross_machines_with_a_shared_key(tmp_path: Path) -> None:
    with trio.fail_after(60):
        async with (
            supervisor("worker_app:server", "--workers", "1", env=SHARED) as (first, _),
            supervisor("worker_app:server", "--workers", "1", env=SHARED) as (second, _),
            haproxy([port_of(first), port_of(second)], tmp_path) as port,
        ):
            url = f"http://127.0.0.1:{port}/mcp"
            async with trio_mcp.open_http_client(url, protocol_version=MODERN) as client:
                pids = [(await client.call_tool("pid", {})).structured_content["result"] for _ in range(6)]
            assert len(set(pids)) == 2 and pids[0::2] == [pids[0]] * 3  # round robin, one keep-alive connection

            for _ in range(4):
                asked_by: list[int] = []
                result = await greet_through(url, asked_by)
                text = result.content[0].text
                assert not result.is_error, text
                assert text.startswith("Ada answered on ")
                assert int(text.split()[-1]) != asked_by[-1]  # the retry reached the other machine


async def test_without_a_shared_key_the_retry_fails_clearly(tmp_path: Path) -> None:
    """What happens when the machines were not given one key: a clear invalid-params error, not a hang."""
    with trio.fail_after(60):
        async with (
            supervisor("worker_app:server", "--workers", "1") as (first, _),
            supervisor("worker_app:server", "--workers", "1") as (second, _),
            haproxy([port_of(first), port_of(second)], tmp_path) as port,
        ):
            with pytest.raises(trio_mcp.McpError, match="requestState failed its integrity check"):
                await greet_through(f"http://127.0.0.1:{port}/mcp", [])


async def test_sessions_work_behind_a_balancer_that_sticks_to_the_session_id(tmp_path: Path) -> None:
    """The legacy era needs stickiness until sessions roam: with the session id in a stick table every
    request of a session, concurrent ones and its GET stream included, reaches the server that created it."""
    with trio.fail_after(60):
        async with (
            supervisor("worker_app:server", "--workers", "1") as (first, _),
            supervisor("worker_app:server", "--workers", "1") as (second, _),
            haproxy([port_of(first), port_of(second)], tmp_path, sticky_sessions=True) as port,
        ):
            url = f"http://127.0.0.1:{port}/mcp"
            served_by: set[int] = set()
            for _ in range(2):
                async with trio_mcp.open_http_client(url, protocol_version="2025-11-25") as client:
                    pids: list[int] = []

                    async def call() -> None:
                        result = await client.call_tool("pid", {"busy": 0.01})
                        pids.append(result.structured_content["result"])  # noqa: B023 (called before the loop moves on)

                    async with trio.open_nursery() as nursery:
                        for _ in range(12):
                            nursery.start_soon(call)
                    assert len(pids) == 12 and len(set(pids)) == 1
                    served_by |= set(pids)
            assert len(served_by) == 2  # sessions still spread: the balancer pins each one, not the client
