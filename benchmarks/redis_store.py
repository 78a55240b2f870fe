"""RedisEventStore speed against a real redis-server on 127.0.0.1, with each append-only fsync policy.

    python benchmarks/redis_store.py [--appends 2000]

For ``appendfsync always`` (every acknowledged event is on disk) and ``everysec`` (up to a second of events
may be lost if the Redis machine crashes): appends per second one after another (one SSE stream) and from
16 concurrent streams, and replays of a 200-event stream per second. Starts and stops its own redis-server
(Debian's ``redis-server`` package) in a temporary directory.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import trio

from trio_mcp.scale import RedisClient, RedisEventStore

#: An event's data as the HTTP transport stores it: the message's JSON text.
MESSAGE = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":5}}'


def start_redis(binary: str, directory: Path, fsync: str) -> tuple[subprocess.Popen[bytes], int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    argv = [
        binary,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(directory),
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        fsync,
        "--logfile",
        str(directory / "redis.log"),
    ]
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            time.sleep(0.02)
    process.kill()
    raise TimeoutError("redis-server did not start")


async def measure(port: int, appends: int) -> tuple[float, float, float]:
    async with RedisClient(f"redis://127.0.0.1:{port}/0") as redis:
        store = RedisEventStore(redis, max_events_per_stream=appends + 1000)
        began = time.perf_counter()
        for _ in range(appends):
            await store.append("bench", "sequential", MESSAGE)
        sequential = appends / (time.perf_counter() - began)

        async def stream(index: int) -> None:
            for _ in range(appends // 16):
                await store.append("bench", f"concurrent-{index}", MESSAGE)

        began = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for index in range(16):
                nursery.start_soon(stream, index)
        concurrent = (appends // 16 * 16) / (time.perf_counter() - began)

        first = await store.append("bench", "replayed", MESSAGE)
        for _ in range(200):
            await store.append("bench", "replayed", MESSAGE)
        began = time.perf_counter()
        for _ in range(50):
            replayed = await store.replay("bench", first)
            assert replayed is not None and len(replayed[1]) == 200
        replays = 50 / (time.perf_counter() - began)
    return sequential, concurrent, replays


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--appends", type=int, default=2000)
    args = parser.parse_args(argv)
    binary = shutil.which("redis-server")
    if binary is None:
        print("redis-server is not installed (bash tests/scale/setup.sh installs it)", file=sys.stderr)
        return 1
    print(f"{'appendfsync':>11} {'appends/s':>10} {'16 streams':>11} {'replays/s':>10}")
    for fsync in ("always", "everysec"):
        with tempfile.TemporaryDirectory() as scratch:
            process, port = start_redis(binary, Path(scratch), fsync)
            try:
                sequential, concurrent, replays = trio.run(measure, port, args.appends)
            finally:
                process.terminate()
                process.wait(10)
        print(f"{fsync:>11} {sequential:>10.0f} {concurrent:>11.0f} {replays:>10.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
