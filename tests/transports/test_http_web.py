"""The HTTP server as a web component: CORS for browser clients, routes of your own, liveness and readiness.

Raw HTTP/1.1 over 127.0.0.1, so every header a browser would see is asserted as sent.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
import trio.testing

from trio_mcp import Server
from trio_mcp.transports.http import Drain, HttpTransportOptions, Request, Response

from transport_helpers import initialize_request  # isort: skip

APP = "http://localhost:5173"


def make_server() -> Server:
    server = Server("web")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    return server


async def serve(nursery: trio.Nursery, **options: Any) -> int:
    server = make_server()
    port: int = await nursery.start(
        lambda task_status: server.serve_http(
            "127.0.0.1", 0, options=HttpTransportOptions(**options), task_status=task_status
        )
    )
    return port


async def raw(
    port: int, method: str, path: str, headers: dict[str, str] | None = None, body: bytes = b""
) -> tuple[int, dict[str, list[str]], bytes]:
    """One request on its own connection; the status, the headers (lower-case names) and the body."""
    head = {"host": f"127.0.0.1:{port}", "connection": "close", **(headers or {})}
    if body:
        head["content-length"] = str(len(body))
    lines = [f"{method} {path} HTTP/1.1", *(f"{name}: {value}" for name, value in head.items()), "", ""]
    with trio.fail_after(10):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all("\r\n".join(lines).encode("latin-1") + body)
            data = b""
            while chunk := await stream.receive_some():
                data += chunk
    head_bytes, _, rest = data.partition(b"\r\n\r\n")
    status_line, *fields = head_bytes.decode("latin-1").split("\r\n")
    parsed: dict[str, list[str]] = {}
    for field in fields:
        name, _, value = field.partition(":")
        parsed.setdefault(name.strip().lower(), []).append(value.strip())
    return int(status_line.split()[1]), parsed, rest


INITIALIZE = json.dumps(initialize_request(id=1, client="page")).encode()
POST_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


# -- CORS -----------------------------------------------------------------------------------------------------


async def test_preflight_from_an_allowed_origin_allows_the_mcp_headers(nursery: trio.Nursery) -> None:
    port = await serve(nursery, cors_origins=[APP])
    status, headers, _ = await raw(
        port,
        "OPTIONS",
        "/mcp",
        {
            "origin": APP,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, authorization, mcp-session-id, mcp-protocol-version, "
            "last-event-id, mcp-method, mcp-name, mcp-param-region",
        },
    )
    assert status == 204
    assert headers["access-control-allow-origin"] == [APP]
    assert (
        "POST" in headers["access-control-allow-methods"][0] and "DELETE" in headers["access-control-allow-methods"][0]
    )
    allowed = {name.strip() for name in headers["access-control-allow-headers"][0].split(",")}
    assert {"authorization", "mcp-session-id", "mcp-protocol-version", "mcp-param-region"} <= allowed
    assert headers["vary"] == ["origin"]


@pytest.mark.parametrize(
    "request_headers",
    [
        {"origin": "http://evil.example", "access-control-request-method": "POST"},
        {"origin": APP, "access-control-request-method": "POST", "access-control-request-headers": "x-secret"},
    ],
)
async def test_preflight_from_another_origin_or_with_other_headers_is_refused(
    nursery: trio.Nursery, request_headers: dict[str, str]
) -> None:
    port = await serve(nursery, cors_origins=[APP])
    status, headers, _ = await raw(port, "OPTIONS", "/mcp", request_headers)
    assert status == 403
    assert "access-control-allow-origin" not in headers


async def test_responses_to_an_allowed_origin_expose_the_session_id(nursery: trio.Nursery) -> None:
    port = await serve(nursery, cors_origins=[APP], json_response=True)
    status, headers, body = await raw(port, "POST", "/mcp", {**POST_HEADERS, "origin": APP}, INITIALIZE)
    assert status == 200, body
    assert headers["access-control-allow-origin"] == [APP]
    exposed = {name.strip() for name in headers["access-control-expose-headers"][0].split(",")}
    assert exposed == {"mcp-session-id", "mcp-protocol-version", "www-authenticate", "dpop-nonce"}
    assert headers["mcp-session-id"]


async def test_an_unauthenticated_browser_can_read_the_challenge(nursery: trio.Nursery) -> None:
    async def authenticate(token: str) -> str | None:
        return "alice" if token == "good" else None

    port = await serve(nursery, cors_origins=[APP], authenticate=authenticate)
    status, headers, _ = await raw(port, "POST", "/mcp", {**POST_HEADERS, "origin": APP}, INITIALIZE)
    assert status == 401
    assert headers["www-authenticate"] and headers["access-control-allow-origin"] == [APP]


async def test_without_cors_nothing_changes(nursery: trio.Nursery) -> None:
    port = await serve(nursery)
    status, headers, _ = await raw(port, "OPTIONS", "/mcp", {"origin": APP, "access-control-request-method": "POST"})
    assert status == 405
    assert not any(name.startswith("access-control-") for name in headers)
    status, headers, _ = await raw(port, "POST", "/mcp", {**POST_HEADERS, "origin": APP}, INITIALIZE)
    assert status == 200 and not any(name.startswith("access-control-") for name in headers)


async def test_dns_rebinding_protection_is_unchanged_with_cors(nursery: trio.Nursery) -> None:
    port = await serve(nursery, cors_origins=["https://app.example"])
    # A listed CORS origin passes the Origin check; any other foreign origin and any foreign Host do not.
    status, _, _ = await raw(port, "POST", "/mcp", {**POST_HEADERS, "origin": "https://app.example"}, INITIALIZE)
    assert status == 200
    status, _, _ = await raw(port, "POST", "/mcp", {**POST_HEADERS, "origin": "https://evil.example"}, INITIALIZE)
    assert status == 403
    status, _, _ = await raw(
        port,
        "OPTIONS",
        "/mcp",
        {"host": "evil.example", "origin": "https://app.example", "access-control-request-method": "POST"},
    )
    assert status == 421


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (["*"], ValueError),
        (["https://app.example/path"], ValueError),
        (["app.example"], ValueError),
        (["ftp://app.example"], ValueError),
        ("https://app.example", TypeError),
    ],
)
def test_invalid_cors_origins_are_refused_at_the_call(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="cors_origins"):
        HttpTransportOptions(cors_origins=value)


# -- routes and probes ----------------------------------------------------------------------------------------


async def test_user_routes_are_served_beside_the_endpoint(nursery: trio.Nursery) -> None:
    async def status_page(request: Request, response: Response) -> None:
        body = json.dumps({"method": request.method, "query": request.query_params}).encode()
        await response.send(200, [("content-type", "application/json")], body)

    port = await serve(nursery, routes={"/status": status_page})
    status, headers, body = await raw(port, "GET", "/status?verbose=1")
    assert status == 200 and headers["content-type"] == ["application/json"]
    assert json.loads(body) == {"method": "GET", "query": {"verbose": ["1"]}}
    status, _, _ = await raw(port, "GET", "/status", {"host": "evil.example"})
    assert status == 421  # routes are behind the same Host check
    status, _, _ = await raw(port, "POST", "/mcp", POST_HEADERS, INITIALIZE)
    assert status == 200


def test_routes_are_checked_at_the_call() -> None:
    with pytest.raises(ValueError, match="routes"):
        HttpTransportOptions(routes={"status": lambda request, response: None})  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="routes"):
        HttpTransportOptions(routes={"/status": "not a handler"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="readiness_path"):
        HttpTransportOptions(readiness_path="ready")


@pytest.mark.parametrize("path", ["/mcp", "/sse", "/healthz"])
async def test_a_route_on_a_path_the_server_serves_is_refused(nursery: trio.Nursery, path: str) -> None:
    async def handler(request: Request, response: Response) -> None:
        await response.send(200)

    with pytest.raises(ValueError, match="routes"):
        await serve(nursery, routes={path: handler})


async def test_readiness_turns_503_while_draining_and_liveness_stays(nursery: trio.Nursery) -> None:
    drain = Drain()
    port = await serve(nursery, drain=drain)
    assert (await raw(port, "GET", "/healthz"))[0] == 200
    assert (await raw(port, "GET", "/readyz"))[::2] == (200, b"ok\n")
    # A probe whose head is half sent when the drain begins is answered during the drain.
    probes = []
    for path in ("/readyz", "/healthz"):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        await stream.send_all(f"GET {path} HTTP/1.1\r\nhost: localhost\r\n".encode())
        probes.append(stream)
    async with trio.open_nursery() as inner:
        inner.start_soon(drain, 5)
        await trio.testing.wait_all_tasks_blocked()
        answers = []
        with trio.fail_after(5):
            for stream in probes:
                async with stream:
                    await stream.send_all(b"\r\n")
                    answers.append(await stream.receive_some())
    assert answers[0].startswith(b"HTTP/1.1 503") and answers[0].endswith(b"draining\n")
    assert answers[1].startswith(b"HTTP/1.1 200")


async def test_probes_can_be_turned_off(nursery: trio.Nursery) -> None:
    port = await serve(nursery, liveness_path=None, readiness_path=None)
    assert (await raw(port, "GET", "/healthz"))[0] == 404
