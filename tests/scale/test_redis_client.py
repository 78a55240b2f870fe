"""The Redis client against a real redis-server on 127.0.0.1: replies, refusals, timeouts, outages, recovery."""

from __future__ import annotations

import signal
import ssl
import subprocess
from pathlib import Path

import pytest
import trio
from paths import ROOT
from scale_peers import BINARY, SKIP_REASON, RedisServer

from trio_mcp.scale.redis import RedisClient, RedisCommandError, RedisError, RedisUnavailable


async def test_commands_and_pipelines_round_trip(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url) as redis:
        with trio.fail_after(10):
            assert await redis.execute("SET", "greeting", "héllo") == b"OK"
            assert (await redis.execute("GET", "greeting")).decode() == "héllo"
            assert await redis.pipeline([["INCR", "n"], ["INCRBY", "n", 41], ["GET", "missing"]]) == [1, 42, None]
            assert await redis.execute("RPUSH", "list", b"\x00\xff", 2.5) == 2
            assert await redis.execute("LRANGE", "list", 0, -1) == [b"\x00\xff", b"2.5"]


async def test_a_refused_command_is_a_typed_error_and_the_connection_stays_usable(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url, max_connections=1) as redis:
        with trio.fail_after(10):
            await redis.execute("SET", "text", "x")
            with pytest.raises(RedisCommandError, match="LPUSH.*WRONGTYPE"):
                await redis.execute("LPUSH", "text", "y")
            assert await redis.execute("PING") == b"PONG"


async def test_an_outage_is_a_clear_error_within_the_bounds_and_service_resumes(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url, connect_timeout=0.5, retries=2, retry_backoff=0.05) as redis:
        with trio.fail_after(20):
            assert await redis.execute("SET", "kept", "1") == b"OK"  # an idle pooled connection now exists
            redis_server.stop()
            began = trio.current_time()
            with pytest.raises(RedisUnavailable, match="cannot connect") as caught:
                await redis.execute("GET", "kept")
            assert not caught.value.maybe_applied
            assert trio.current_time() - began < 3
            redis_server.start()  # same port and directory: the append-only file brings the data back
            assert await redis.execute("GET", "kept") == b"1"


async def test_a_hung_server_times_out_instead_of_blocking(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url, command_timeout=0.3, retries=1) as redis:
        with trio.fail_after(10):
            await redis.execute("PING")
            assert redis_server.process is not None
            redis_server.process.send_signal(signal.SIGSTOP)
            try:
                with pytest.raises(RedisUnavailable, match="no reply within 0.3 s") as caught:
                    await redis.execute("GET", "k")
                assert caught.value.maybe_applied
            finally:
                redis_server.process.send_signal(signal.SIGCONT)
            assert await redis.execute("PING") == b"PONG"


async def test_cancelling_a_command_ends_it_now_and_discards_its_connection(redis_server: RedisServer) -> None:
    async with RedisClient(redis_server.url, max_connections=1) as redis:
        with trio.fail_after(10):
            with trio.move_on_after(0.2) as scope:
                await redis.execute("BLPOP", "never", 5)  # blocks in Redis for 5 s
            assert scope.cancelled_caught
            await redis.execute("RPUSH", "never", "late")
            assert await redis.execute("LPOP", "never") == b"late"  # the cancelled BLPOP did not take it


def test_options_are_checked_at_the_call() -> None:
    with pytest.raises(ValueError, match="redis://"):
        RedisClient("http://127.0.0.1:6379")
    with pytest.raises(ValueError, match="command_timeout"):
        RedisClient(command_timeout=0)
    with pytest.raises(ValueError, match="retries"):
        RedisClient(retries=-1)
    with pytest.raises(ValueError, match="database"):
        RedisClient("redis://127.0.0.1:6379/zero")


def test_without_hiredis_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "hiredis", None)
    from trio_mcp.scale import RedisClient as Lazy

    with pytest.raises(ImportError, match=r"pip install 'trio-mcp\[redis\]'"):
        Lazy()


async def test_a_dedicated_connection_is_the_callers_own(redis_server: RedisServer) -> None:
    """What a subscription runs on: a connection on the client's database that the pool's commands never use, so
    putting it in subscribe mode leaves the pool working."""
    url = redis_server.url.removesuffix("/0") + "/2"
    async with RedisClient(url, max_connections=1) as redis:
        with trio.fail_after(10):  # commands written in RESP, as the connection sends them
            await redis.execute("SET", "where", "db2")
            connection = await redis.open_dedicated_connection()
            try:
                assert await connection.round_trip(b"*2\r\n$3\r\nGET\r\n$5\r\nwhere\r\n", 1) == [b"db2"]
                subscribed = await connection.round_trip(b"*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nnews\r\n", 1)
                assert subscribed == [[b"subscribe", b"news", 1]]
                assert await redis.execute("GET", "where") == b"db2"
                assert await redis.execute("PUBLISH", "news", "hello") == 1
                assert await connection.round_trip(b"", 1) == [[b"message", b"news", b"hello"]]
            finally:
                await trio.aclose_forcefully(connection.stream)


async def test_a_subscription_receives_what_is_published(redis_server: RedisServer) -> None:
    from trio_mcp.scale.pubsub import subscribe

    async with RedisClient(redis_server.url) as redis:
        with trio.fail_after(10):
            async with subscribe(redis, "news", "weather") as messages:
                assert await redis.execute("PUBLISH", "weather", "rain") == 1
                assert await redis.execute("PUBLISH", "news", b"\x00bytes") == 1
                received = [await messages.__anext__(), await messages.__anext__()]
            assert received == [("weather", b"rain"), ("news", b"\x00bytes")]


async def test_a_subscription_to_a_silent_server_ends_with_a_clear_error(redis_server: RedisServer) -> None:
    """A server that stops answering without closing the connection (a partition) is noticed by the PING probe."""
    from trio_mcp.scale.pubsub import subscribe

    async with RedisClient(redis_server.url, command_timeout=0.2, connect_timeout=0.2, retries=1) as redis:
        with trio.fail_after(10):
            async with subscribe(redis, "news", health_interval=0.2) as messages:
                assert redis_server.process is not None
                redis_server.process.send_signal(signal.SIGSTOP)
                try:
                    with pytest.raises(RedisUnavailable, match="cannot subscribe"):
                        await messages.__anext__()
                finally:
                    redis_server.process.send_signal(signal.SIGCONT)


def _self_signed(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        capture_output=True, timeout=30, check=True,
    )  # fmt: skip
    return cert, key


async def test_tls_with_a_trusted_certificate_and_a_clear_error_for_an_untrusted_one(tmp_path: Path) -> None:
    if BINARY is None:
        pytest.skip(SKIP_REASON)
    cert, key = _self_signed(tmp_path)
    server = RedisServer(tmp_path, tls=(cert, key))
    server.start()
    try:
        trusted = ssl.create_default_context(cafile=str(cert))
        async with RedisClient(server.url, ssl_context=trusted) as redis:
            with trio.fail_after(10):
                assert await redis.execute("SET", "secret", "kept") == b"OK"
                assert await redis.execute("GET", "secret") == b"kept"
        async with RedisClient(server.url, retries=5) as untrusting:  # the system CAs do not know this one
            with trio.fail_after(10), pytest.raises(RedisError, match="self.signed certificate"):
                await untrusting.execute("PING")
    finally:
        server.stop()
    with pytest.raises(ValueError, match="ssl_context"):
        RedisClient("redis://127.0.0.1", ssl_context=trusted)


@pytest.mark.bench
def test_the_client_comparison_benchmark_runs() -> None:
    import os
    import sys

    if BINARY is None:
        pytest.skip(SKIP_REASON)
    root = ROOT
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "redis_clients.py"), "--calls", "50"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    ours = next(line.split() for line in done.stdout.splitlines() if line.split()[:1] == ["trio_mcp"])
    assert float(ours[2]) > 0
