"""The pytest plugin (``trio_mcp.pytest_plugin``), exercised the way users meet it: test files run by pytest."""

from __future__ import annotations

import textwrap

import pytest

SERVER = """
import time
from contextlib import asynccontextmanager

import pytest
import trio

from trio_mcp import Context, Server

events = []


@asynccontextmanager
async def lifespan(server):
    events.append("lifespan started")
    yield {"db": "connected"}
    events.append("lifespan ended")


server = Server("plugin-test", lifespan=lifespan)


@server.tool()
async def db_state(ctx: Context) -> str:
    return ctx.lifespan_state["db"]


@server.tool()
async def long_job(minutes: int, ctx: Context) -> str:
    try:
        for minute in range(1, minutes + 1):
            await trio.sleep(60)
            await ctx.report_progress(minute, total=minutes)
    except trio.Cancelled:
        events.append(f"cancelled at {trio.current_time():.0f}")
        raise
    return "finished"


@pytest.fixture
def mcp_server():
    return server
"""


def _write(pytester: pytest.Pytester, body: str) -> None:
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    pytester.makepyfile(test_server=SERVER + textwrap.dedent(body))


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "trio_mcp.pytest_plugin", "-q", *args, timeout=120)


def test_in_memory_client_runs_the_lifespan(pytester: pytest.Pytester) -> None:
    _write(
        pytester,
        """
        async def test_state(mcp_client):
            assert events == ["lifespan started"]
            result = await mcp_client.call_tool("db_state")
            assert result.content[0].text == "connected"

        def test_lifespan_ended_after_the_test():
            assert events == ["lifespan started", "lifespan ended"]
    """,
    )
    _run(pytester).assert_outcomes(passed=2)


def test_virtual_time_makes_an_hour_of_progress_and_cancellation_take_milliseconds(pytester: pytest.Pytester) -> None:
    _write(
        pytester,
        """
        async def test_progress_for_an_hour(mcp_client, autojump_clock):
            started = time.perf_counter()
            updates = []
            result = await mcp_client.call_tool("long_job", {"minutes": 60}, on_progress=updates.append,
                                                timeout=120)
            assert result.content[0].text == "finished"
            assert [u.progress for u in updates] == list(range(1, 61))
            assert trio.current_time() >= 3600
            assert time.perf_counter() - started < 5

        async def test_cancel_after_half_an_hour(mcp_client, autojump_clock):
            started = time.perf_counter()
            with trio.move_on_after(30 * 60 + 1):
                await mcp_client.call_tool("long_job", {"minutes": 60}, timeout=None)
            await trio.sleep(1)
            assert events[-1] == "cancelled at 1801"
            assert time.perf_counter() - started < 5

        async def test_timeout(mcp_client, autojump_clock):
            from trio_mcp import RequestTimeout
            with pytest.raises(RequestTimeout):
                await mcp_client.call_tool("long_job", {"minutes": 10}, timeout=90)
    """,
    )
    _run(pytester).assert_outcomes(passed=3)


def test_real_transports(pytester: pytest.Pytester) -> None:
    _write(
        pytester,
        """
        async def test_stdio(mcp_stdio_client):
            result = await mcp_stdio_client.call_tool("db_state")
            assert result.content[0].text == "connected"

        async def test_http(mcp_http_client, mcp_http_url):
            assert mcp_http_url.startswith("http://127.0.0.1:") and mcp_http_url.endswith("/mcp")
            assert mcp_http_client.era == "modern"
            result = await mcp_http_client.call_tool("db_state")
            assert result.content[0].text == "connected"
    """,
    )
    _run(pytester).assert_outcomes(passed=2)


def test_client_options_pin_the_revision(pytester: pytest.Pytester) -> None:
    _write(
        pytester,
        """
        @pytest.fixture
        def mcp_client_options():
            return {"protocol_version": "2025-06-18"}

        async def test_memory(mcp_client):
            assert mcp_client.protocol_version == "2025-06-18"

        async def test_http(mcp_http_client):
            assert mcp_http_client.protocol_version == "2025-06-18"
    """,
    )
    _run(pytester).assert_outcomes(passed=2)


def test_missing_server_fixture_says_what_to_do(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    pytester.makepyfile(test_nothing="async def test_it(mcp_client):\n    pass\n")
    result = _run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*define a fixture named `mcp_server`*"])


def test_a_failing_assertion_is_shown_as_itself_not_inside_a_nursery_group(pytester: pytest.Pytester) -> None:
    _write(
        pytester,
        """
        async def test_wrong_state(mcp_client):
            result = await mcp_client.call_tool("db_state")
            assert result.content[0].text == "disconnected"

        async def test_without_the_fixtures():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.sleep, 0)
                raise KeyError("left as it is")
    """,
    )
    result = _run(pytester)
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*_ test_wrong_state _*",
            '>*assert result.content?0?.text == "disconnected"',  # ? for [ ]: fnmatch reads them as a set
            "E*AssertionError: assert 'connected' == 'disconnected'",
        ]
    )
    ours, theirs = result.stdout.str().split(" test_without_the_fixtures _")
    assert "ExceptionGroup" not in ours and "Exceptions from Trio nursery" not in ours
    assert "ExceptionGroup: Exceptions from Trio nursery" in theirs  # a test without the fixtures is left alone
