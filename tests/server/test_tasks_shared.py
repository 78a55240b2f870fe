"""Two servers sharing one task store, as two processes share one Redis: either answers for a task the other runs
(its questions answered, its cancellation delivered), and the liveness rule finalizes a task whose process
stopped renewing its lease, once, never while the lease is live. On trio's MockClock."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from test_tasks import MODERN, _modern, clock, connect, make_server

from trio_mcp import Context, Server
from trio_mcp._core.tasks import TaskRecord
from trio_mcp._identity import caller_key
from trio_mcp.server import MemoryTaskStore, TaskManager

__all__ = ["clock"]  # the fixture, used by name


class CountingStore(MemoryTaskStore):
    """Counts the final records it accepted, per task."""

    def __init__(self) -> None:
        super().__init__(lease=3.0)
        self.finals: dict[str, list[str]] = {}

    async def save(self, record: TaskRecord, *, lapsed_only: bool = False) -> bool:
        kept = await super().save(record, lapsed_only=lapsed_only)
        if kept and record.terminal and self.finals.get(record.task_id, [None])[-1] != record.status:
            self.finals.setdefault(record.task_id, []).append(record.status)
        return kept


async def test_the_other_server_answers_questions_and_cancels(clock: trio.testing.MockClock) -> None:
    store = CountingStore()
    (a, seen_a), (b, _) = (make_server(TaskManager(store=store, poll_interval=0.5)) for _ in range(2))
    with trio.fail_after(120):
        async with a.running(), b.running(), connect(a, MODERN) as on_a, connect(b, MODERN) as on_b:
            asked = await _modern(on_a, "tools/call", {"name": "ask"})
            task_id = asked["taskId"]
            while (state := await _modern(on_b, "tasks/get", {"taskId": task_id}))["status"] == "working":
                await trio.sleep(0.1)
            assert state["status"] == "input_required"
            (key,) = state["inputRequests"]
            answer = {"action": "accept", "content": {"name": "Grace"}}
            answered = await _modern(on_b, "tasks/update", {"taskId": task_id, "inputResponses": {key: answer}})
            assert set(answered) == {"resultType", "_meta"}
            while (state := await _modern(on_b, "tasks/get", {"taskId": task_id}))["status"] != "completed":
                await trio.sleep(0.1)
            assert state["result"]["content"][0]["text"] == "Hello, Grace"

            slow = (await _modern(on_a, "tools/call", {"name": "slow", "arguments": {"seconds": 500}}))["taskId"]
            await seen_a["started"].wait()
            assert set(await _modern(on_b, "tasks/cancel", {"taskId": slow})) == {"resultType", "_meta"}
            assert seen_a["cancelled"] == 1  # the work on a stopped before b answered
            assert (await _modern(on_b, "tasks/get", {"taskId": slow}))["status"] == "cancelled"
    assert store.finals == {task_id: ["completed"], slow: ["cancelled"]}


async def test_a_task_whose_lease_lapsed_is_failed_once_and_never_before(clock: trio.testing.MockClock) -> None:
    """A record left unfinished by a process that stopped (it renews its lease no more): working for as long as
    the lease lasts, then failed, by the poll that notices or by the sweep, within two leases."""
    store = CountingStore()
    server, _ = make_server(TaskManager(store=store))
    with trio.fail_after(120):
        async with server.running(), connect(server, MODERN) as client:
            gone: list[str] = []
            for task_id in ("polled" * 4, "swept" * 4):
                assert await store.save(orphan(task_id, server.tasks.now()))
                gone.append(task_id)
            start = trio.current_time()
            while (state := await _modern(client, "tasks/get", {"taskId": gone[0]}))["status"] == "working":
                await trio.sleep(0.25)
            assert store.lease <= trio.current_time() - start <= store.lease + 0.5
            assert state["status"] == "failed" and state["error"]["code"] == -32603
            await trio.sleep(store.lease)  # nobody asks about the second: the sweep finds it within two leases
            swept = await store.load(gone[1])
            assert swept is not None and swept.status == "failed"
            again = await _modern(client, "tasks/get", {"taskId": gone[0]})
            assert again["lastUpdatedAt"] == state["lastUpdatedAt"]
    assert store.finals == {gone[0]: ["failed"], gone[1]: ["failed"]}


def orphan(
    task_id: str, now: float, *, attempt: int = 1, attempts: int = 1, call: dict[str, Any] | None = None
) -> TaskRecord:
    """An unfinished record, as a process that died left it."""
    return TaskRecord(
        task_id=task_id,
        owner=caller_key(None),  # the caller of an unauthenticated connection
        form="extension",
        instance="a process that died",
        created_at=now,
        last_updated_at=now,
        ttl_ms=None,
        attempt=attempt,
        attempts=attempts,
        call=call,
    )


async def test_a_task_of_a_tool_with_retry_on_loss_is_run_again_then_failed(clock: trio.testing.MockClock) -> None:
    """The process that notices a lapsed lease takes the task over and runs it again from the start, with the
    input the store kept; the attempt shows in the status message; the last attempt lost is failed."""
    store = CountingStore()
    server, _ = make_server(TaskManager(store=store))
    runs: list[int] = []

    @server.tool(task_support="optional", retry_on_loss=2)
    async def resilient(ctx: Context, count: int) -> str:
        runs.append(count)
        await ctx.report_progress(1, 2, "halfway")
        await trio.sleep(1)
        return f"counted {count}"

    envelope = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    }
    call = {"name": "resilient", "arguments": {"count": 7}, "_meta": envelope}
    with trio.fail_after(120):
        async with server.running(), connect(server, MODERN) as client:
            now = server.tasks.now()
            assert await store.save(orphan("again" * 4, now, attempt=1, attempts=3, call=call))
            assert await store.save(orphan("spent" * 4, now, attempt=3, attempts=3, call=call))
            seen = []
            while (state := await _modern(client, "tasks/get", {"taskId": "again" * 4}))["status"] != "completed":
                seen.append(state.get("statusMessage"))
                await trio.sleep(0.1)
            assert state["result"]["content"][0]["text"] == "counted 7" and runs == [7]
            assert "attempt 2 of 3: halfway" in seen
            spent = await _modern(client, "tasks/get", {"taskId": "spent" * 4})
            assert spent["status"] == "failed"
            assert spent["statusMessage"].startswith("attempt 3 of 3: the process running the task stopped")
    assert store.finals == {"again" * 4: ["completed"], "spent" * 4: ["failed"]}


def test_retry_on_loss_needs_a_task_tool_and_a_count() -> None:
    server = Server("s")
    for bad, message in ((-1, "whole number"), (True, "whole number"), (1.5, "whole number")):
        with pytest.raises(ValueError, match=message):
            server.tool(name="t", task_support="optional", retry_on_loss=bad)(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retry_on_loss needs task_support"):
        server.tool(name="t", retry_on_loss=1)(lambda: None)


class PartedStore(CountingStore):
    """A store some task managers cannot reach for a while (as a process loses Redis): their renewals and writes
    fail; the liveness rule's writes, by the others, go through."""

    def __init__(self) -> None:
        super().__init__()
        self.parted: set[str] = set()

    async def renew(self, instance: str, task_ids: Any) -> dict[str, list[Any]]:
        if instance in self.parted:
            raise OSError("the store cannot be reached")
        return await super().renew(instance, task_ids)

    async def save(self, record: TaskRecord, *, lapsed_only: bool = False) -> bool:
        if record.instance in self.parted and not lapsed_only:
            raise OSError("the store cannot be reached")
        return await super().save(record, lapsed_only=lapsed_only)


async def test_a_process_cut_off_past_its_lease_loses_its_task(clock: trio.testing.MockClock) -> None:
    """While a's renewals fail, b finalizes a's task failed once its lease lapsed; when a reaches the store again
    its write is refused: it stops the work and answers from the store, so both say the one final status."""
    store = PartedStore()
    (a, seen_a), (b, _) = (make_server(TaskManager(store=store)) for _ in range(2))
    with trio.fail_after(120):
        async with a.running(), b.running(), connect(a, MODERN) as on_a, connect(b, MODERN) as on_b:
            task_id = (await _modern(on_a, "tools/call", {"name": "slow", "arguments": {"seconds": 500}}))["taskId"]
            await seen_a["started"].wait()
            store.parted.add(a.tasks.instance)
            while (state := await _modern(on_b, "tasks/get", {"taskId": task_id}))["status"] == "working":
                await trio.sleep(0.5)
            assert state["status"] == "failed" and seen_a["cancelled"] == 0
            store.parted.clear()
            await trio.sleep(store.lease)  # a's next renewal
            assert seen_a["cancelled"] == 1
            assert await _modern(on_a, "tasks/get", {"taskId": task_id}) == state
    assert store.finals == {task_id: ["failed"]}
