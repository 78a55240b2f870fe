"""Every public way to open a client, and the client's calls, forced down their failure paths.

Each raises one typed exception a caller can catch: ``TypeError``/``ValueError`` naming a bad option before
anything starts, ``ConnectionClosed`` for a server that cannot be reached or dies (whatever it was doing),
never an ``ExceptionGroup`` and never an HTTP library's internal wording.
"""

from __future__ import annotations

import inspect
import socket
import sys
from functools import partial
from typing import Any, AsyncIterator, Awaitable, Callable

import pytest
import trio
from paths import TESTS
from waiting import Arrivals

import trio_mcp
from trio_mcp import Client, Server
from trio_mcp.client import (
    ClientGroup,
    ClientOptions,
    connect_client,
    connect_http_client,
    connect_stdio_client,
    connect_websocket_client,
    open_client,
    open_http_client,
    open_stdio_client,
    open_websocket_client,
)
from trio_mcp.testing import open_in_memory
from trio_mcp.transports import memory_stream_pair
from trio_mcp.transports.streamable_http import HttpTransportOptions

SERVER = [sys.executable, str(TESTS / "servers" / "stdio_server.py")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sync_roots() -> list[Any]:
    return []  # pragma: no cover - refused before it could run


def sync_sampling(params: Any) -> Any:
    return None  # pragma: no cover - refused before it could run


def make_server(in_flight: Arrivals | None = None) -> Server:
    """A server with ``echo`` and a ``slow`` call that stays in flight (counted in ``in_flight``) until stopped."""
    server = Server("entry-points")

    @server.tool()
    async def slow() -> str:
        """Stay in flight until the server is stopped under the call."""
        if in_flight is not None:
            in_flight.arrive()
        await trio.sleep_forever()

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text."""
        return text

    return server


# -- options are checked at the call, before anything starts -----------------------------------------------------

BAD_CLIENT_OPTIONS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"reqest_timeout": 5}, TypeError, "'reqest_timeout'"),
    ({"roots": sync_roots}, TypeError, "roots must be an async function"),
    ({"sampling": sync_sampling}, TypeError, "sampling must be an async function"),
    ({"elicitation": lambda params: None}, TypeError, "elicitation must be an async function"),
    ({"roots": "yes"}, TypeError, "roots must be an async function"),
    ({"on_log": 3}, TypeError, "on_log must be a function"),
    ({"protocol_version": "2099-01-01"}, ValueError, "protocol_version must be one of auto, 2024-11-05"),
    ({"request_timeout": -1}, ValueError, "request_timeout must be a number of seconds, zero or more"),
    ({"request_timeout": "60"}, TypeError, "request_timeout must be a number of seconds or None"),
    ({"probe_timeout": None}, TypeError, "probe_timeout must be a number of seconds, not NoneType"),
    ({"max_pages": 0}, ValueError, "max_pages must be at least 1"),
    ({"sampling_tools": "true"}, TypeError, "sampling_tools must be True or False"),
    ({"client_info": {"name": "x"}}, TypeError, "client_info must be a trio_mcp.types.Implementation"),
]


def _openers(server_port: int) -> dict[str, Callable[..., Awaitable[Any]]]:
    """One coroutine per public entry point, each taking the client options."""

    async def with_block(cm: Any) -> None:
        async with cm:
            raise AssertionError("the client should not have opened")  # pragma: no cover

    async def in_nursery(connect: Callable[[trio.Nursery], Awaitable[Client]]) -> None:
        # The connect_* call itself must raise the one exception (the caller's nursery would group it).
        failure: BaseException | None = None
        async with trio.open_nursery() as nursery:
            try:
                await connect(nursery)
            except Exception as exc:
                failure = exc
            nursery.cancel_scope.cancel()
        assert failure is not None, "the client should not have opened"
        raise failure

    async def group(**options: Any) -> None:
        async with ClientGroup() as clients:
            await clients.connect_stdio("s", SERVER, **options)

    http_url = f"http://127.0.0.1:{server_port}/mcp"
    ws_url = f"ws://127.0.0.1:{server_port}/"
    return {
        "open_stdio_client": lambda **o: with_block(open_stdio_client(SERVER, **o)),
        "connect_stdio_client": lambda **o: in_nursery(lambda n: connect_stdio_client(n, SERVER, **o)),
        "open_client": lambda **o: with_block(open_client(memory_stream_pair()[0], **o)),
        "connect_client": lambda **o: in_nursery(lambda n: connect_client(n, memory_stream_pair()[0], **o)),
        "open_http_client": lambda **o: with_block(open_http_client(http_url, **o)),
        "connect_http_client": lambda **o: in_nursery(lambda n: connect_http_client(n, http_url, **o)),
        "open_websocket_client": lambda **o: with_block(open_websocket_client(ws_url, **o)),
        "connect_websocket_client": lambda **o: in_nursery(lambda n: connect_websocket_client(n, ws_url, **o)),
        "ClientGroup.connect_stdio": group,
        "open_in_memory": lambda **o: with_block(open_in_memory(make_server(), **o)),
    }


@pytest.mark.parametrize("entry_point", list(_openers(1)))
@pytest.mark.parametrize(("options", "error", "message"), BAD_CLIENT_OPTIONS)
async def test_a_bad_client_option_is_refused_by_name_at_the_call(
    entry_point: str, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # The HTTP and WebSocket URLs point at a closed port: a check made after connecting would fail differently.
    opener = _openers(free_port())[entry_point]
    with trio.fail_after(10):
        with pytest.raises(error) as info:
            await opener(**options)
    assert type(info.value) is error
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: open_stdio_client(SERVER, stderr="discard"), ValueError, "stderr must be 'forward', 'capture'"),
        (lambda: open_stdio_client("python server.py"), TypeError, "command must be a sequence of arguments"),
        (lambda: open_stdio_client([]), TypeError, "command must be a non-empty sequence"),
        (lambda: open_stdio_client(SERVER, env={"A": 1}), TypeError, "env must be a mapping of str to str"),
        (lambda: open_http_client("ftp://127.0.0.1/mcp"), ValueError, "url must be an absolute http:// or https://"),
        (lambda: open_http_client("127.0.0.1:8000/mcp"), ValueError, "url must be an absolute http://"),
        (lambda: open_http_client("http://127.0.0.1:99999/mcp"), ValueError, "is not a valid URL"),
        (lambda: open_http_client("http://127.0.0.1/mcp", headers={"x": 1}), TypeError, "headers must be a mapping"),
        (lambda: open_http_client("http://127.0.0.1/mcp", auth="token"), TypeError, "auth must be an authorization"),
        (lambda: open_websocket_client("http://127.0.0.1/"), ValueError, "url must be an absolute ws:// or wss://"),
        (
            lambda: open_websocket_client("ws://127.0.0.1/", transport_options={"ping": 1}),
            TypeError,
            "unknown WebSocket transport option 'ping'",
        ),
        (
            lambda: open_websocket_client("ws://127.0.0.1/", transport_options={"pong_timeout": -1}),
            ValueError,
            "transport_options['pong_timeout'] must be a number of seconds",
        ),
    ],
)
async def test_a_bad_transport_option_is_refused_by_name(
    call: Callable[[], Any], error: type[Exception], message: str
) -> None:
    with trio.fail_after(5):
        with pytest.raises(error) as info:
            async with call():
                pass  # pragma: no cover
    assert type(info.value) is error
    assert message in str(info.value)


def test_client_options_list_exactly_the_client_keywords() -> None:
    keywords = [name for name in inspect.signature(Client).parameters if name != "stream"]
    assert keywords == list(ClientOptions.__annotations__)


async def test_calls_check_their_arguments() -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_server()) as client:
            with pytest.raises(ValueError, match="timeout must be a number of seconds, zero or more"):
                await client.call_tool("echo", {"text": "x"}, timeout=-1)
            with pytest.raises(TypeError, match="timeout must be a number of seconds or None"):
                await client.call_tool("echo", {"text": "x"}, timeout="5")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="arguments must be a dict"):
                await client.call_tool("echo", ["x"])  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="name must be a str"):
                await client.call_tool(7)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="params must be a dict"):
                await client.request("tools/list", [])  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="max_total_timeout must be a number of seconds"):
                await client.call_tool("echo", {"text": "x"}, max_total_timeout=-1)
            assert (await client.call_tool("echo", {"text": "still fine"})).content[0].text == "still fine"  # type: ignore[union-attr]


# -- unreachable and refusing servers ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["auto", "2026-07-28", "2025-11-25", "2024-11-05"])
async def test_http_client_to_a_closed_port_raises_connection_closed(version: str) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with trio.fail_after(10):
        with pytest.raises(trio_mcp.ConnectionClosed) as info:
            async with open_http_client(url, protocol_version=version):
                pass  # pragma: no cover
    assert type(info.value) is trio_mcp.ConnectionClosed
    assert "sub-exception" not in str(info.value)


async def _refuse_everyone(token: str) -> None:
    return None


@pytest.mark.parametrize(
    ("path", "version"),
    [
        ("/mcp", "auto"),
        ("/mcp", "2026-07-28"),
        ("/mcp", "2025-11-25"),
        ("/sse", "2024-11-05"),
    ],
)
@pytest.mark.parametrize("refusal", ["no token", "bad origin"])
async def test_http_refusals_are_one_mcp_error_with_the_status(
    nursery: trio.Nursery, path: str, version: str, refusal: str
) -> None:
    options = HttpTransportOptions(authenticate=_refuse_everyone if refusal == "no token" else None)
    port = await nursery.start(partial(make_server().serve_http, port=0, options=options))
    headers = {"Origin": "http://evil.example"} if refusal == "bad origin" else None
    with trio.fail_after(10):
        with pytest.raises(trio_mcp.McpError) as info:
            async with open_http_client(f"http://127.0.0.1:{port}{path}", protocol_version=version, headers=headers):
                pass  # pragma: no cover
    assert info.value.data["status"] == (401 if refusal == "no token" else 403)
    if refusal == "no token":
        assert "Bearer" in info.value.data["wwwAuthenticate"]


async def test_websocket_client_to_a_closed_port_raises_connection_closed() -> None:
    with trio.fail_after(10):
        with pytest.raises(trio_mcp.ConnectionClosed, match="could not connect"):
            async with open_websocket_client(f"ws://127.0.0.1:{free_port()}/"):
                pass  # pragma: no cover


async def test_websocket_upgrade_refused_raises_connection_closed(nursery: trio.Nursery) -> None:
    port = await nursery.start(make_server().serve_websocket, "127.0.0.1", 0)
    with trio.fail_after(10):
        with pytest.raises(trio_mcp.ConnectionClosed):
            async with open_websocket_client(f"ws://127.0.0.1:{port}/", origin="http://evil.example"):
                pass  # pragma: no cover


async def test_stdio_client_for_a_missing_program_raises_connection_closed() -> None:
    with trio.fail_after(5):
        with pytest.raises(trio_mcp.ConnectionClosed, match="could not start server"):
            async with open_stdio_client(["/nonexistent/mcp-server"]):
                pass  # pragma: no cover


# -- a server that stops under a call ----------------------------------------------------------------------------


async def _serve_until_cancelled(
    nursery: trio.Nursery, serve: Callable[..., Awaitable[Any]]
) -> tuple[int, trio.CancelScope]:
    scope = trio.CancelScope()

    async def run(task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        with scope:
            await serve(port=0, task_status=task_status)

    port: int = await nursery.start(run)
    return port, scope


@pytest.mark.parametrize(
    ("path", "version"),
    [("/mcp", "2026-07-28"), ("/mcp", "2025-11-25"), ("/mcp", "2025-03-26"), ("/sse", "2024-11-05")],
)
async def test_http_server_stopping_mid_call_gives_connection_closed(
    nursery: trio.Nursery, path: str, version: str
) -> None:
    in_flight = Arrivals()
    port, server_scope = await _serve_until_cancelled(nursery, make_server(in_flight).serve_http)
    with trio.fail_after(15):
        async with open_http_client(f"http://127.0.0.1:{port}{path}", protocol_version=version) as client:
            assert client.protocol_version == version
            async with trio.open_nursery() as calls:
                calls.start_soon(_cancel_in_flight, server_scope, in_flight)
                with pytest.raises(trio_mcp.ConnectionClosed) as info:
                    await client.call_tool("slow")
    assert type(info.value) is trio_mcp.ConnectionClosed
    assert "can't handle event" not in str(info.value) and "role=" not in str(info.value)


async def test_websocket_server_stopping_mid_call_gives_connection_closed(nursery: trio.Nursery) -> None:
    in_flight = Arrivals()
    port, server_scope = await _serve_until_cancelled(nursery, make_server(in_flight).serve_websocket)
    with trio.fail_after(15):
        async with open_websocket_client(f"ws://127.0.0.1:{port}/") as client:
            async with trio.open_nursery() as calls:
                calls.start_soon(_cancel_in_flight, server_scope, in_flight)
                with pytest.raises(trio_mcp.ConnectionClosed):
                    await client.call_tool("slow")


async def _cancel_in_flight(scope: trio.CancelScope, in_flight: Arrivals) -> None:
    await in_flight.wait_for(1)
    scope.cancel()


async def test_in_memory_peer_gone_mid_call_gives_connection_closed() -> None:
    client_end, server_end = memory_stream_pair()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            in_flight = Arrivals()
            await nursery.start(make_server(in_flight).serve_connection, server_end)

            async def close_soon() -> None:
                await in_flight.wait_for(1)
                await server_end.aclose()

            async with open_client(client_end) as client:
                nursery.start_soon(close_soon)
                with pytest.raises(trio_mcp.ConnectionClosed):
                    await client.call_tool("slow")
            nursery.cancel_scope.cancel()


@pytest.fixture
async def nursery() -> AsyncIterator[trio.Nursery]:
    async with trio.open_nursery() as nursery:
        yield nursery
        nursery.cancel_scope.cancel()


def test_call_signatures_read_well_in_help() -> None:
    # A bare object() sentinel showed as "timeout=<object object at 0x...>".
    for call in (Client.call_tool, Client.request, Client.read_resource, ClientGroup.call_tool):
        text = str(inspect.signature(call))
        assert "object at 0x" not in text and "<the client's request_timeout>" in text, text


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_an_error_inside_listen_leaves_as_itself(version: str) -> None:
    with trio.fail_after(5):
        async with open_in_memory(make_server(), protocol_version=version) as client:
            with pytest.raises(KeyError, match="mine"):
                async with client.listen(tools=True):
                    raise KeyError("mine")
            assert (await client.call_tool("echo", {"text": "on"})).content[0].text == "on"  # type: ignore[union-attr]


async def test_an_error_inside_an_open_block_leaves_as_itself() -> None:
    with trio.fail_after(10):
        with pytest.raises(KeyError, match="mine"):
            async with open_stdio_client(SERVER, protocol_version="2025-11-25"):
                raise KeyError("mine")
        with pytest.raises(KeyError, match="mine"):
            async with ClientGroup() as group:
                await group.connect_stdio("s", SERVER, protocol_version="2025-11-25")
                raise KeyError("mine")


@pytest.mark.parametrize(
    "entry_point", ["open_http_client", "connect_http_client", "open_websocket_client", "connect_websocket_client"]
)
async def test_every_network_entry_point_to_a_closed_port_raises_connection_closed(entry_point: str) -> None:
    opener = _openers(free_port())[entry_point]
    with trio.fail_after(10):
        with pytest.raises(trio_mcp.ConnectionClosed) as info:
            await opener()
    assert type(info.value) is trio_mcp.ConnectionClosed


@pytest.mark.parametrize("entry_point", ["open_stdio_client", "connect_stdio_client", "ClientGroup.connect_stdio"])
async def test_every_stdio_entry_point_reports_a_server_that_dies_during_the_handshake(
    entry_point: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.modules[__name__], "SERVER", ["sh", "-c", "echo 'no config' >&2; exit 2"])
    opener = _openers(1)[entry_point]
    with trio.fail_after(10):
        with pytest.raises(trio_mcp.ConnectionClosed, match="(?s)exited with status 2.*no config"):
            await opener()
