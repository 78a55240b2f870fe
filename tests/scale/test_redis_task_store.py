"""The Redis task store against a real redis-server: the TaskStore contract the task manager relies on, shared by
two clients as two processes would share it."""

from __future__ import annotations

import time
from contextlib import AsyncExitStack

import attrs
import pytest
import trio
from scale_peers import RedisServer
from waiting import Arrivals

from trio_mcp._core.tasks import TaskRecord
from trio_mcp.scale import RedisClient, RedisTaskStore
from trio_mcp.server import MemoryTaskStore


def record(task_id: str, owner: str = "alice", *, created: float, ttl_ms: int | None = None) -> TaskRecord:
    return TaskRecord(
        task_id=task_id,
        owner=owner,
        form="extension",
        instance="one",
        created_at=created,
        last_updated_at=created,
        ttl_ms=ttl_ms,
    )


async def test_records_are_saved_replaced_listed_by_owner_and_deleted(redis_server: RedisServer) -> None:
    now = time.time()
    async with RedisClient(redis_server.url) as first, RedisClient(redis_server.url) as second:
        writer, reader = RedisTaskStore(first), RedisTaskStore(second)  # two processes on one Redis
        with trio.fail_after(10):
            for n in (2, 0, 1):
                await writer.save(record(f"task-{n}-" + "x" * 16, created=now + n))
            await writer.save(record("task-b-" + "x" * 16, owner="bob", created=now))
            assert [r.task_id[:6] for r in await reader.records("alice")] == ["task-0", "task-1", "task-2"]
            done = record("task-1-" + "x" * 16, created=now + 1)
            done.status, done.result = "completed", {"content": [], "structuredContent": {"ünï": "code"}}
            await writer.save(done)
            loaded = await reader.load(done.task_id)
            assert loaded is not None and loaded.to_json() == done.to_json()
            assert await reader.load("missing-" + "x" * 16) is None
            await writer.delete(["task-0-" + "x" * 16, "never-" + "x" * 16])
            assert [r.task_id[:6] for r in await reader.records("alice")] == ["task-1", "task-2"]
            assert [r.owner for r in await reader.records("bob")] == ["bob"]
            assert await reader.records("nobody") == []


async def test_expired_names_the_records_whose_ttl_ran_out(redis_server: RedisServer) -> None:
    now = time.time()
    async with RedisClient(redis_server.url) as redis:
        store = RedisTaskStore(redis, prefix="expiry-test")
        with trio.fail_after(10):
            await store.save(record("short-" + "x" * 16, created=now - 10, ttl_ms=1000))
            await store.save(record("long-" + "x" * 16, created=now, ttl_ms=3_600_000))
            await store.save(record("forever-" + "x" * 16, created=now))
            assert await store.expired(now) == ["short-" + "x" * 16]
            assert sorted(await store.expired(now + 7200)) == ["long-" + "x" * 16, "short-" + "x" * 16]
            kept = record("short-" + "x" * 16, created=now - 10)  # saved again without a TTL: no longer expires
            await store.save(kept)
            assert await store.expired(now) == []
            await store.delete(["long-" + "x" * 16])
            assert await store.expired(now + 7200) == []


@pytest.mark.parametrize("kind", ["memory", "redis"])
async def test_every_write_is_a_compare_and_set_with_leases(kind: str, request: pytest.FixtureRequest) -> None:
    """The rule every store keeps (the memory store in one process, Redis across processes): a final record is
    never replaced, only the lease holder writes, the liveness rule writes only once the lease lapsed; messages
    for a task reach its holder once, and nudges reach every listener."""
    with trio.fail_after(20):
        async with AsyncExitStack() as stack:
            if kind == "redis":
                url = request.getfixturevalue("redis_server").url
                clients = [await stack.enter_async_context(RedisClient(url)) for _ in range(2)]
                runner, other = (RedisTaskStore(client, lease=1.0) for client in clients)
            else:
                runner = other = MemoryTaskStore(lease=1.0)
            nudges: list[str] = []
            nudged = Arrivals()

            async def heard(task_id: str) -> None:
                nudges.append(task_id)
                nudged.arrive()

            nursery = await stack.enter_async_context(trio.open_nursery())
            await nursery.start(other.listen, heard)
            running = record("cas-" + "x" * 16, created=time.time())
            assert await runner.save(running)
            stranger = attrs.evolve(running, instance="two", status_message="not mine")
            failed = attrs.evolve(running, instance="two", status="failed")
            assert not await other.save(stranger)  # another instance may not write it
            assert not await other.save(failed, lapsed_only=True)  # the lease is live
            await other.request(running.task_id, {"kind": "cancel"})
            assert await runner.renew("two", [running.task_id]) == {}  # not the holder: nothing, no renewal
            assert await runner.renew("one", [running.task_id]) == {running.task_id: [{"kind": "cancel"}]}
            assert await runner.renew("one", [running.task_id]) == {running.task_id: []}  # once
            await trio.sleep(0.6)
            await runner.renew("one", [running.task_id])  # renewed: still live past the first lease
            await trio.sleep(0.6)
            assert await other.lapsed() == []
            assert not await other.save(failed, lapsed_only=True)
            await trio.sleep(1.2)  # no renewal for more than a lease: lapsed
            assert await other.lapsed() == [running.task_id]
            assert await runner.renew("one", [running.task_id]) == {}  # a lapsed lease is not renewed
            assert await other.save(failed, lapsed_only=True)
            assert await other.lapsed() == []
            late = attrs.evolve(running, status="completed")
            assert not await runner.save(late)  # the final record stays, whoever writes
            assert not await other.save(attrs.evolve(failed, status_message="again"), lapsed_only=True)
            assert await other.save(failed)  # the same record again (a retried write) is accepted
            loaded = await runner.load(running.task_id)
            assert loaded is not None and loaded.status == "failed" and loaded.instance == "two"
            await runner.announce(running.task_id)
            await nudged.wait_for(2)  # the request's nudge and this one
            assert nudges == [running.task_id] * 2
            nursery.cancel_scope.cancel()
