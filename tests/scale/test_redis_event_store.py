"""The Redis event store against a real redis-server: the async EventStore contract of the HTTP transport,
bounds and expiry, ids that order across writers, and a Redis restart in the middle of a load."""

from __future__ import annotations

import json
import signal

import pytest
import trio
from paths import ROOT
from scale_peers import RedisServer
from waiting import wait_until

from trio_mcp.scale.event_store import RedisEventStore
from trio_mcp.scale.redis import RedisClient, RedisUnavailable


def note(n: int) -> str:
    """An event's data as the transport stores it: the message's JSON text (non-ASCII kept as it is)."""
    message = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": n, "text": "ünïcode"}}
    return json.dumps(message, ensure_ascii=False)


async def test_replay_returns_the_events_after_an_id_in_order(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url) as redis:
        store = RedisEventStore(redis)
        with trio.fail_after(10):
            ids = [await store.append("s1", "req-1", note(n)) for n in range(5)]
            other = await store.append("s1", "req-2", note(99))
            assert len(set(ids + [other])) == 6
            assert await store.replay("s1", ids[1]) == ("req-1", [(i, note(n)) for n, i in list(enumerate(ids))[2:]])
            assert await store.replay("s1", ids[-1]) == ("req-1", [])
            assert await store.replay("s1", other) == ("req-2", [])


async def test_unknown_foreign_and_malformed_ids_replay_nothing(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url) as redis:
        store = RedisEventStore(redis)
        with trio.fail_after(10):
            event = await store.append("s1", "req-1", note(1))
            assert await store.replay("s2", event) is None  # another session's id
            for bad in ("", "garbage", "req-1/", "/1-0", "req-1/1-0", "req-1/../../x", event + "x"):
                assert await store.replay("s1", bad) is None


async def test_forget_drops_every_stream_of_the_session_only(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url) as redis:
        store = RedisEventStore(redis)
        with trio.fail_after(10):
            first = await store.append("gone", "a", note(1))
            second = await store.append("gone", "b", note(2))
            kept = await store.append("stays", "a", note(3))
            await store.forget("gone")
            assert await store.replay("gone", first) is None and await store.replay("gone", second) is None
            assert await store.replay("stays", kept) == ("a", [])
            await store.forget("never-existed")


async def test_streams_are_bounded_and_expire(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url) as redis:
        store = RedisEventStore(redis, max_events_per_stream=10, ttl=1)
        with trio.fail_after(10):
            ids = [await store.append("s", "r", note(n)) for n in range(500)]
            assert await redis.execute("XLEN", "trio_mcp:events:{s}:stream:r") < 250  # MAXLEN ~ trims whole nodes
            assert await store.replay("s", ids[0]) is None  # trimmed away: events are missing, so no replay
            assert 0 < await redis.execute("PTTL", "trio_mcp:events:{s}:stream:r") <= 1000
            assert 0 < await redis.execute("PTTL", "trio_mcp:events:{s}:streams") <= 1000


async def test_ids_from_concurrent_writers_order_the_stream(redis_server: RedisServer) -> None:
    """Two clients (two workers) appending to one stream: the replay order is the order Redis stored them."""
    async with RedisClient(redis_server.url) as one, RedisClient(redis_server.url) as two:
        stores = [RedisEventStore(one), RedisEventStore(two)]
        with trio.fail_after(20):
            first = await stores[0].append("s", "r", note(-1))
            written: list[str] = []

            async def writer(store: RedisEventStore, base: int) -> None:
                for n in range(50):
                    written.append(await store.append("s", "r", note(base + n)))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer, stores[0], 0)
                nursery.start_soon(writer, stores[1], 1000)
            replayed = await stores[1].replay("s", first)
            assert replayed is not None
            ids = [event_id for event_id, _ in replayed[1]]
            assert sorted(ids) == sorted(written) and len(ids) == 100
            entry = [tuple(map(int, i.split("/")[1].split("-"))) for i in ids]
            assert entry == sorted(entry)


async def test_a_redis_restart_mid_load_fails_clearly_recovers_and_loses_nothing_acknowledged(
    redis_server: RedisServer,
) -> None:
    """SIGKILL, not a polite stop: with appendfsync always every acknowledged XADD was on disk first."""
    async with RedisClient(redis_server.url, connect_timeout=0.5, command_timeout=1.0, retries=2) as redis:
        store = RedisEventStore(redis)
        acknowledged: list[tuple[str, int]] = []
        failures: list[RedisUnavailable] = []
        recovered = trio.Event()
        restarted = False
        with trio.fail_after(30):
            start = await store.append("load", "r", note(-1))

            async def load(worker: int) -> None:
                n = 0
                while not recovered.is_set():
                    n += 1
                    number = worker * 100000 + n
                    try:
                        acknowledged.append((await store.append("load", "r", note(number)), number))
                    except RedisUnavailable as exc:
                        failures.append(exc)
                        await trio.sleep(0.02)
                    else:
                        if restarted and failures:
                            recovered.set()
                    await trio.sleep(0)

            async with trio.open_nursery() as nursery:
                for worker in range(4):
                    nursery.start_soon(load, worker)
                await wait_until(lambda: len(acknowledged) >= 200)
                redis_server.stop(signal.SIGKILL)
                await trio.sleep(0.5)  # requests in this window fail
                count_before_restart = len(acknowledged)
                redis_server.start()
                restarted = True
            assert failures, "the outage went unnoticed"
            assert all("Redis at 127.0.0.1" in str(exc) for exc in failures)
            assert len(acknowledged) > count_before_restart  # recovered after the restart
            replayed = await store.replay("load", start)
            assert replayed is not None
            stored = {event_id: json.loads(data)["params"]["progress"] for event_id, data in replayed[1]}
            missing = [(event_id, n) for event_id, n in acknowledged if stored.get(event_id) != n]
            assert not missing, f"{len(missing)} acknowledged events lost"
            # nothing doubled: every stored message is distinct
            assert len(set(stored.values())) == len(stored)
            print(
                f"acknowledged {len(acknowledged)}, failed {len(failures)} "
                f"({sum(exc.maybe_applied for exc in failures)} maybe applied), stored {len(stored)}"
            )


def test_options_are_checked_at_the_call() -> None:
    redis = RedisClient()
    with pytest.raises(ValueError, match="max_events_per_stream"):
        RedisEventStore(redis, max_events_per_stream=0)
    with pytest.raises(ValueError, match="ttl"):
        RedisEventStore(redis, ttl=0.5)
    with pytest.raises(ValueError, match="prefix"):
        RedisEventStore(redis, prefix="a{b}")


@pytest.mark.bench
def test_the_store_benchmark_runs() -> None:
    import os
    import subprocess
    import sys

    from scale_peers import BINARY, SKIP_REASON

    if BINARY is None:
        pytest.skip(SKIP_REASON)
    root = ROOT
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "redis_store.py"), "--appends", "64"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line.split() for line in done.stdout.splitlines()[1:]]
    assert [row[0] for row in rows] == ["always", "everysec"] and all(float(row[1]) > 0 for row in rows)
