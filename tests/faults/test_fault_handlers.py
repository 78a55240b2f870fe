"""What one misbehaving handler may do to a server, over real stdio pipes and real HTTP on 127.0.0.1.

The rule: no exception raised inside one handler takes down the server, its session or any other request; it
becomes an error answer for that request. The only exception allowed to stop the server is KeyboardInterrupt
(a Ctrl-C arriving as a handler's exception), and even then every caller gets a typed answer promptly, never a
hang. Each case runs N ordinary calls concurrently with the poisoned one: all of them must be answered.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
from fault_peers import ANSWER_WITHIN, TRANSPORTS, fault_client

from trio_mcp import Client, ConnectionClosed, McpError

CONCURRENT = 8

# Where the rule is still broken: (kind, transport) -> the defect. One defect per xfail. None today.
KNOWN_DEFECTS: dict[tuple[str, str], str] = {}


def cases(kinds: list[str]) -> list[Any]:
    out = []
    for kind in kinds:
        for transport in TRANSPORTS:
            defect = KNOWN_DEFECTS.get((kind, transport))
            marks = [pytest.mark.xfail(strict=True, reason=defect)] if defect else []
            out.append(pytest.param(kind, transport, marks=marks, id=f"{kind}-{transport}"))
    return out


async def poisoned_among_many(
    client: Client, tool: str, arguments: dict[str, Any], *, within: float = ANSWER_WITHIN
) -> Any:
    """Run the poisoned call beside CONCURRENT ordinary ones; return its outcome once all have finished."""
    answers: list[str] = []
    outcome: list[Any] = []

    async def ordinary() -> None:
        result = await client.call_tool("nap", {"seconds": 0.3}, timeout=ANSWER_WITHIN)
        answers.append(result.content[0].text)  # type: ignore[union-attr]

    async def poisoned() -> None:
        try:
            outcome.append(await client.call_tool(tool, arguments, timeout=within))
        except McpError as exc:
            outcome.append(exc)

    with trio.fail_after(ANSWER_WITHIN * 2):
        async with trio.open_nursery() as nursery:
            for _ in range(CONCURRENT):
                nursery.start_soon(ordinary)
            nursery.start_soon(poisoned)
    assert answers == ["rested"] * CONCURRENT, "an ordinary call beside the poisoned one was lost"
    return outcome[0]


def assert_is_an_error_answer(outcome: Any) -> None:
    if isinstance(outcome, McpError):
        assert outcome.code < 0
    else:
        assert outcome.is_error is True, outcome


async def assert_still_serving(client: Client) -> None:
    with trio.fail_after(ANSWER_WITHIN):
        result = await client.call_tool("nap", {"seconds": 0})
        assert result.content[0].text == "rested"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "kind, transport",
    cases(
        [
            "Exception",
            "ExceptionGroup",
            "RecursionError",
            "MemoryError",
            "BaseException",
            "BaseExceptionGroup",
            "SystemExit",
            "GeneratorExit",
        ]
    ),
)
async def test_a_raising_handler_becomes_an_error_for_that_request_only(kind: str, transport: str) -> None:
    async with fault_client(transport) as (client, _):
        outcome = await poisoned_among_many(client, "explode", {"kind": kind})
        assert_is_an_error_answer(outcome)
        await assert_still_serving(client)


@pytest.mark.parametrize("tool", ["escape_cancelled", "own_deadline", "own_cancel", "unencodable_meta", "cyclic_meta"])
@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_handler_ending_itself_gets_an_answer(
    tool: str, transport: str, request: pytest.FixtureRequest
) -> None:
    defect = KNOWN_DEFECTS.get((tool, transport))
    if defect:
        request.applymarker(pytest.mark.xfail(strict=True, reason=defect))
    async with fault_client(transport) as (client, _):
        # A handler's own deadline is 0.1 s: its answer is due long before an ordinary call's bound.
        within = ANSWER_WITHIN / 2 if tool.startswith("own_") else ANSWER_WITHIN
        outcome = await poisoned_among_many(client, tool, {}, within=within)
        assert_is_an_error_answer(outcome)
        await assert_still_serving(client)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_keyboard_interrupt_in_a_handler_never_leaves_a_caller_hanging(transport: str) -> None:
    """KeyboardInterrupt is the one exception that may stop the server (it is how a Ctrl-C arrives). Today it does,
    on every transport (the process exits with status 1); callers then get ConnectionClosed promptly. Whether it
    stops the server or is answered as an error, no caller is left hanging."""
    async with fault_client(transport) as (client, _):
        with trio.fail_after(ANSWER_WITHIN * 2):
            try:
                outcome = await client.call_tool("explode", {"kind": "KeyboardInterrupt"}, timeout=ANSWER_WITHIN)
            except (McpError, ConnectionClosed):
                return
            assert_is_an_error_answer(outcome)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_failing_resource_or_prompt_handler_leaks_nothing_internal(transport: str) -> None:
    """A non-tool handler's exception becomes a JSON-RPC error that says it failed, not what it was doing: the
    exception text stays in the server's log (paths, tokens, queries are the server's business)."""
    async with fault_client(transport) as (client, _):
        with trio.fail_after(ANSWER_WITHIN):
            for call in (lambda: client.read_resource("fault://secret"), lambda: client.get_prompt("secret_prompt")):
                with pytest.raises(McpError) as info:
                    await call()
                assert info.value.code == -32603
                assert "/srv/private" not in str(info.value.to_error()) and "hunter2" not in str(info.value.to_error())
        await assert_still_serving(client)
