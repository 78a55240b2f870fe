"""The Redis task store against a real redis-server: the TaskStore contract the task manager relies on, shared by
two clients as two processes would share it."""

from __future__ import annotations

import time

import trio
from scale_peers import RedisServer

from trio_mcp._core.tasks import TaskRecord
from trio_mcp.scale import RedisClient, RedisTaskStore


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
