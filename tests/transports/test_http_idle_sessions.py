"""An idle Streamable HTTP session holds no task: its requests run in the endpoint's nursery while they last, so
thousands of open sessions cost a few KiB each, and ending a session still cancels what it runs at once (real
sockets)."""

from __future__ import annotations

import gc
import json
import tracemalloc

import trio

from trio_mcp import Server
from trio_mcp.transports._client.h11client import HttpClient

from transport_helpers import POST_HEADERS, open_raw_session  # isort: skip
from waiting import HeldCalls  # isort: skip


def traced_outside_trio() -> int:
    """Bytes traced now but for trio's own allocations and the snapshot's: trio's heap of deadlines keeps up to a
    thousand cancel scopes past their end (pruned lazily), noise that would swamp what a session leaves behind."""
    ignored = [tracemalloc.Filter(False, "*/trio/*"), tracemalloc.Filter(False, tracemalloc.__file__)]
    snapshot = tracemalloc.take_snapshot().filter_traces(ignored)
    return sum(stat.size for stat in snapshot.statistics("filename"))


async def test_idle_sessions_hold_no_task_and_under_8_kib_each() -> None:
    server = Server("idle")
    HeldCalls(server)
    with trio.fail_after(60):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/mcp"
            for _ in range(10):  # warm up: the pooled connection, caches, first-use hooks
                await open_raw_session(http, url)
            gc.collect()
            tasks_before = trio.lowlevel.current_statistics().tasks_living
            tracemalloc.start()
            try:
                # Rounds of 300 sessions opened, then ended. The first grows the tables that hold sessions (a dict
                # or set keeps its size once grown), and a later one may meet a table that resizes to drop its
                # deleted entries; a leak leaves bytes behind in every round.
                rounds = []
                for _ in range(3):
                    before, outside_before = tracemalloc.get_traced_memory()[0], traced_outside_trio()
                    sessions = [await open_raw_session(http, url) for _ in range(300)]
                    gc.collect()
                    per_session = (tracemalloc.get_traced_memory()[0] - before) / 300
                    tasks_idle = trio.lowlevel.current_statistics().tasks_living
                    for headers in sessions:
                        deleted = await http.request("DELETE", url, headers=headers)
                        assert deleted.status == 200
                        await deleted.aclose()
                    del sessions, headers
                    await trio.testing.wait_all_tasks_blocked()
                    gc.collect()
                    rounds.append((per_session, tasks_idle, (traced_outside_trio() - outside_before) / 300))
            finally:
                tracemalloc.stop()
            nursery.cancel_scope.cancel()
    for per_session, tasks_idle, _ in rounds:
        assert tasks_idle == tasks_before, f"{tasks_idle - tasks_before} tasks for 300 idle sessions"
        assert per_session < 8192, f"{per_session:.0f} bytes traced per idle session"
    left = min(left for _, _, left in rounds[1:])
    assert left < 100, f"{left:.0f} bytes per session left after they ended"


async def test_ending_a_session_cancels_its_call_at_once() -> None:
    server = Server("idle")
    held = HeldCalls(server)
    with trio.fail_after(20):
        async with HttpClient() as http, trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/mcp"
            session = await open_raw_session(http, url)
            call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "wait", "arguments": {}}}
            stream = await http.request("POST", url, headers=[*POST_HEADERS, *session], body=json.dumps(call).encode())
            await held.started.wait_for(1)
            tasks_busy = trio.lowlevel.current_statistics().tasks_living
            deleted = await http.request("DELETE", url, headers=session)
            assert deleted.status == 200
            await deleted.aclose()
            await held.cancelled.wait_for(1)  # the handler was cancelled, not left running in the endpoint's nursery
            while await stream.receive_some():  # and the call's stream ends
                pass
            await trio.testing.wait_all_tasks_blocked()
            assert trio.lowlevel.current_statistics().tasks_living < tasks_busy
            gone = await http.request("POST", url, headers=[*POST_HEADERS, *session], body=json.dumps(call).encode())
            assert gone.status == 404
            await gone.aclose()
            nursery.cancel_scope.cancel()
