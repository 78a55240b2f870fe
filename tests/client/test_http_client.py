"""The h11/trio HTTP client against our own server (and a few raw misbehaving ones) on loopback sockets:
pooling, streaming, timeouts, typed errors, cancellation by closing, TLS with a throwaway self-signed cert."""

from __future__ import annotations

import logging
import shutil
import socket
import ssl
import subprocess
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest
import trio
import trio.testing

from trio_mcp._core.sse import ServerSentEvent, SSEDecoder, encode_event
from trio_mcp.transports._client.h11client import (
    HttpClient,
    HttpClosed,
    HttpConnectError,
    HttpError,
    HttpProtocolError,
    HttpResponseTooLarge,
    HttpTimeout,
    HttpTimeouts,
)
from trio_mcp.transports._h11server import HttpLimits, HttpRequest, HttpResponse, serve_http, serve_http_listeners


@asynccontextmanager
async def serving(handler: Any, **limits: Any) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        limits.setdefault("graceful_shutdown_timeout", 0.5)
        listeners = await nursery.start(partial(serve_http, handler, limits=HttpLimits(**limits)))
        yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def raw_server(handle: Callable[[trio.SocketStream], Awaitable[None]]) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
        yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}"
        nursery.cancel_scope.cancel()


async def info(request: HttpRequest, response: HttpResponse) -> None:
    body = await request.read_body()
    status = int(request.query_params.get("status", ["200"])[0])
    port = request.peer[1] if request.peer else 0
    await response.send(status, [("x-peer-port", str(port)), ("x-method", request.method)], body or b"ok")


async def test_get_post_and_non_2xx_statuses_are_returned() -> None:
    with trio.fail_after(5):
        async with serving(info) as url, HttpClient() as http:
            response = await http.request("GET", url + "/x")
            assert response.status == 200 and response.reason == "OK"
            assert response.headers["X-Method"] == "GET"
            assert await response.read() == b"ok"
            response = await http.request("POST", url + "/x", headers={"content-type": "text/plain"}, body=b"data")
            assert await response.read() == b"data"
            for status in (404, 500, 503):
                response = await http.request("GET", f"{url}/?status={status}")
                assert response.status == status
                await response.aclose()
            response = await http.request("HEAD", url + "/")
            assert response.headers["content-length"] == "2"
            assert await response.read() == b""


async def test_sequential_requests_reuse_one_connection() -> None:
    with trio.fail_after(5):
        async with serving(info) as url, HttpClient() as http:
            ports = set()
            for _ in range(5):
                async with await http.request("GET", url) as response:
                    ports.add(response.headers["x-peer-port"])
                    await response.read()
            assert len(ports) == 1


async def test_concurrent_requests_use_several_connections_and_reuse_them() -> None:
    arrived = 0
    all_here = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        nonlocal arrived, all_here
        arrived += 1
        if arrived == 3:
            all_here.set()
        await all_here.wait()  # all three are in flight at once
        await response.send(200, body=str(request.peer[1] if request.peer else 0).encode())

    async def one(http: HttpClient, url: str, ports: list[bytes]) -> None:
        response = await http.request("GET", url)
        ports.append(await response.read())

    with trio.fail_after(5):
        async with serving(handler) as url, HttpClient(max_connections_per_origin=3) as http:
            rounds: list[set[bytes]] = []
            for _ in range(2):
                arrived, all_here = 0, trio.Event()
                ports: list[bytes] = []
                async with trio.open_nursery() as nursery:
                    for _ in range(3):
                        nursery.start_soon(one, http, url, ports)
                rounds.append(set(ports))
            assert len(rounds[0]) == 3
            assert rounds[1] == rounds[0]


async def test_pool_limit_makes_requests_wait_and_then_time_out(autojump_clock: trio.testing.MockClock) -> None:
    release = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200)
        await response.write(b"held")
        await release.wait()
        await response.finish()

    with trio.fail_after(5):
        async with serving(handler) as url, HttpClient(max_connections_per_origin=1) as http:
            held = await http.request("GET", url)
            with pytest.raises(HttpTimeout) as info_:
                await http.request("GET", url, timeouts=HttpTimeouts(pool_acquire=0.2))
            assert info_.value.phase == "pool"
            release.set()
            assert await held.read() == b"held"
            second = await http.request("GET", url)
            await second.aclose()


async def test_streaming_read_delivers_pieces_as_they_come() -> None:
    gates = [trio.Event() for _ in range(3)]

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        for i, gate in enumerate(gates):
            await response.write(encode_event(f"event {i}", id=str(i)))
            await gate.wait()
        await response.finish()

    with trio.fail_after(5):
        async with serving(handler) as url, HttpClient() as http:
            response = await http.request("GET", url, headers=[("accept", "text/event-stream")])
            assert response.headers["content-type"] == "text/event-stream"
            decoder = SSEDecoder()
            for i, gate in enumerate(gates):
                events: list[ServerSentEvent] = []
                while not events:
                    events = decoder.receive_data(await response.receive_some())
                assert [(e.data, e.id) for e in events] == [(f"event {i}", str(i))]
                gate.set()
            assert await response.receive_some() == b""
            assert response.complete
            assert await response.receive_some() == b""
            await response.aclose()


async def test_read_idle_timeout_but_a_slow_steady_stream_is_fine(autojump_clock: trio.testing.MockClock) -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200)
        for _ in range(5):
            await response.write(b".")
            await trio.sleep(0.1)
        if request.path == "/stall":
            await response.disconnected.wait()
            return
        await response.finish()

    with trio.fail_after(5):
        async with serving(handler) as url, HttpClient(timeouts=HttpTimeouts(read_idle=0.3)) as http:
            response = await http.request("GET", url + "/steady")
            assert await response.read() == b"....."
            response = await http.request("GET", url + "/stall")
            with pytest.raises(HttpTimeout) as info_:
                await response.read()
            assert info_.value.phase == "read"
            await response.aclose()


async def test_connection_refused_is_a_connect_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with trio.fail_after(5):
        async with HttpClient() as http:
            with pytest.raises(HttpConnectError):
                await http.request("GET", f"http://127.0.0.1:{port}/")


async def test_server_closing_mid_body_is_http_closed() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200, [("content-length", "100")] if request.path == "/cl" else [])
        await response.write(b"0123456789")
        raise RuntimeError("handler dies mid-body")

    with trio.fail_after(5):
        async with serving(handler) as url, HttpClient() as http:
            for path in ("/cl", "/chunked"):
                response = await http.request("GET", url + path)
                with pytest.raises(HttpClosed):
                    await response.read()
                with pytest.raises(trio.ClosedResourceError):
                    await response.receive_some()


async def test_closing_a_stream_midway_closes_the_connection(
    caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    seen: list[tuple[str, float]] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.path == "/stream":
            await response.start(200)
            await response.write(b"first")
        await response.disconnected.wait()
        seen.append((request.path, trio.current_time()))

    with trio.fail_after(5):
        async with serving(handler) as url, HttpClient() as http:
            response = await http.request("GET", url + "/stream")
            assert await response.receive_some() == b"first"
            closed_at = trio.current_time()
            await response.aclose()
            while not seen:
                await trio.sleep(0.01)
            assert seen[0][0] == "/stream" and seen[0][1] - closed_at < 0.1
            # Cancelling a request before its head arrives closes its connection too.
            with trio.move_on_after(0.2) as scope:
                await http.request("POST", url + "/cancelled", body=b"{}")
            assert scope.cancelled_caught
            while len(seen) < 2:
                await trio.sleep(0.01)
            assert seen[1][0] == "/cancelled"
    # A handler that gives up because its client left is not an error.
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_read_limit() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.path == "/declared":
            await response.send(200, body=b"x" * 5000)
        else:
            await response.start(200)
            for _ in range(5):
                await response.write(b"x" * 1000)
            await response.finish()

    with trio.fail_after(5):
        async with serving(handler) as url, HttpClient() as http:
            for path in ("/declared", "/chunked"):
                response = await http.request("GET", url + path)
                with pytest.raises(HttpResponseTooLarge):
                    await response.read(limit=4096)
            response = await http.request("GET", url + "/declared")
            assert len(await response.read(limit=5000)) == 5000


async def test_early_error_response_is_read_even_while_uploading() -> None:
    with trio.fail_after(5):
        async with serving(info, max_body_bytes=1000) as url, HttpClient() as http:
            response = await http.request("POST", url, body=b"x" * 2_000_000)
            assert response.status == 413
            await response.aclose()
            # And the client carries on with a fresh connection.
            async with await http.request("GET", url) as response:
                assert response.status == 200


async def test_stale_keep_alive_connection_is_not_reused(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(5):
        async with serving(info, keep_alive_timeout=0.1) as url, HttpClient(keep_alive_expiry=60) as http:
            first = await http.request("GET", url)
            port = first.headers["x-peer-port"]
            await first.read()
            await trio.sleep(0.3)  # the server has closed the idle connection by now
            second = await http.request("POST", url, body=b"not lost")
            assert await second.read() == b"not lost"
            assert second.headers["x-peer-port"] != port


async def test_idle_connections_expire(autojump_clock: trio.testing.MockClock) -> None:
    with trio.fail_after(5):
        async with serving(info) as url, HttpClient(keep_alive_expiry=0.1) as http:
            first = await http.request("GET", url)
            await first.read()
            await trio.sleep(0.2)
            second = await http.request("GET", url)
            await second.read()
            assert first.headers["x-peer-port"] != second.headers["x-peer-port"]


async def test_server_that_closes_without_answering() -> None:
    async def hang_up(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)
        await stream.aclose()

    with trio.fail_after(5):
        async with raw_server(hang_up) as url, HttpClient() as http:
            with pytest.raises(HttpClosed):
                await http.request("GET", url)


async def test_malformed_response_is_a_protocol_error() -> None:
    async def garbage(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)
        await stream.send_all(b"SMTP ready\r\n\r\n")
        await trio.sleep(1)

    with trio.fail_after(5):
        async with raw_server(garbage) as url, HttpClient() as http:
            with pytest.raises(HttpProtocolError):
                await http.request("GET", url)


async def test_http10_close_delimited_response() -> None:
    async def old_server(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)
        await stream.send_all(b"HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil ")
        await stream.send_all(b"the end")
        await stream.aclose()

    with trio.fail_after(5):
        async with raw_server(old_server) as url, HttpClient() as http:
            response = await http.request("GET", url)
            assert response.http_version == "1.0"
            assert await response.read() == b"until the end"


async def test_errors_form_one_hierarchy_and_bad_input_is_a_value_error() -> None:
    assert all(issubclass(c, HttpError) for c in (HttpConnectError, HttpTimeout, HttpProtocolError, HttpClosed))
    with trio.fail_after(5):
        http = HttpClient()
        for bad in ("ftp://x/", "http:///nohost", "http://user:pw@host/", "http://host:99999/"):
            with pytest.raises(ValueError):
                await http.request("GET", bad)
        with pytest.raises(ValueError):
            await http.request("GET", "http://127.0.0.1:1/", headers={"bad\nname": "v"})
        await http.aclose()
        with pytest.raises(RuntimeError):
            await http.request("GET", "http://127.0.0.1:1/")
        with pytest.raises(ValueError):
            HttpTimeouts(connect=0)


async def test_closing_the_client_closes_responses_still_open() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200)
        await response.write(b"x")
        await response.disconnected.wait()

    with trio.fail_after(5):
        async with serving(handler) as url:
            async with HttpClient() as http:
                response = await http.request("GET", url)
                assert await response.receive_some() == b"x"
            with pytest.raises(HttpClosed):
                await response.receive_some()
            await response.aclose()


def _self_signed(tmp: Path) -> tuple[Path, Path] | None:
    if shutil.which("openssl") is None:
        return None
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    result = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
        capture_output=True,
        timeout=30,
    )  # fmt: skip
    return (cert, key) if result.returncode == 0 else None


async def test_https_with_a_self_signed_certificate(tmp_path: Path) -> None:
    pair = _self_signed(tmp_path)
    if pair is None:
        pytest.skip("the openssl CLI cannot make a self-signed certificate here")
    cert, key = pair
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            tcp = await trio.open_tcp_listeners(0, host="127.0.0.1")
            port = tcp[0].socket.getsockname()[1]
            listeners = [trio.SSLListener(tcp[0], server_context, https_compatible=True)]
            await nursery.start(
                partial(serve_http_listeners, info, listeners, limits=HttpLimits(graceful_shutdown_timeout=0.5))
            )
            async with HttpClient(ssl_context=ssl.create_default_context(cafile=str(cert))) as http:
                ports = set()
                for _ in range(2):
                    response = await http.request("POST", f"https://127.0.0.1:{port}/", body=b"secret")
                    assert await response.read() == b"secret"
                    ports.add(response.headers["x-peer-port"])
                assert len(ports) == 1  # keep-alive over TLS
            # The default context does not trust our certificate.
            async with HttpClient() as http:
                with pytest.raises(HttpConnectError):
                    await http.request("GET", f"https://127.0.0.1:{port}/")
            nursery.cancel_scope.cancel()
