"""The guard shared by the HTTP and WebSocket servers: Host and Origin allow-lists and their defaults."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from trio_mcp.transports.http.guard import Guard

LOCAL = Guard.for_server("127.0.0.1")
ANYWHERE = Guard.for_server("0.0.0.0")
CONFIGURED = Guard.for_server(
    "0.0.0.0", allowed_hosts=["api.example", "::1"], allowed_origins=["https://app.example", "tools.example"]
)


@pytest.mark.parametrize(
    ("guard", "hosts", "status"),
    [
        (LOCAL, ["localhost:8000"], None),
        (LOCAL, ["127.0.0.1"], None),
        (LOCAL, ["[::1]:8000"], None),
        (LOCAL, ["evil.example"], 421),
        (LOCAL, ["localhost.evil.example"], 421),
        (LOCAL, ["[::1].evil.example"], 400),
        (LOCAL, ["localhost:8000.evil.example"], 400),
        (LOCAL, ["localhost", "evil.example"], 400),
        (LOCAL, [], 421),
        (ANYWHERE, ["evil.example"], None),
        (ANYWHERE, [], None),
        (ANYWHERE, ["[::1]evil.example"], 400),
        (CONFIGURED, ["API.example:443"], None),
        (CONFIGURED, ["[::1]"], None),
        (CONFIGURED, ["localhost"], 421),
    ],
)
def test_host(guard: Guard, hosts: list[str], status: int | None) -> None:
    refused = guard.check_host(hosts)
    assert (refused.status if refused else None) == status


@pytest.mark.parametrize(
    ("guard", "origins", "allowed"),
    [
        (LOCAL, [], True),
        (LOCAL, ["http://localhost:5173"], True),
        (LOCAL, ["https://127.0.0.1"], True),
        (LOCAL, ["http://[::1]:3000"], True),
        (LOCAL, ["http://evil.example"], False),
        (LOCAL, ["http://localhost.evil.example"], False),
        (LOCAL, ["http://[::1].evil.example"], False),
        (LOCAL, ["null"], False),
        (LOCAL, ["file://localhost"], False),
        (LOCAL, ["http://localhost/path"], False),
        (LOCAL, ["http://localhost", "http://localhost"], False),
        (CONFIGURED, ["https://app.example"], True),
        (CONFIGURED, ["https://app.example/"], True),
        (CONFIGURED, ["http://app.example"], False),
        (CONFIGURED, ["https://tools.example:8443"], True),
        (CONFIGURED, ["http://localhost"], False),
    ],
)
def test_origin(guard: Guard, origins: list[str], allowed: bool) -> None:
    refused = guard.check_origin(origins)
    assert (refused is None) == allowed
    if refused is not None:
        assert refused.status == 403


def test_bearer_tokens() -> None:
    async def authenticate(token: str) -> str | None:
        return "alice" if token == "good" else None

    guard = Guard.for_server("127.0.0.1", authenticate=authenticate)

    async def main() -> None:
        assert await guard.principal("Bearer good") == ("alice", None)
        for header in (None, "Bearer bad", "Basic good", "Bearer ", "good"):
            principal, refused = await guard.principal(header)
            assert principal is None and refused is not None and refused.status == 401
            assert ("www-authenticate", 'Bearer realm="mcp"') in refused.headers
        assert await Guard.for_server("127.0.0.1").principal(None) == (None, None)

    trio.run(main)


def test_the_stream_lock_is_fair() -> None:
    from trio_mcp.transports._quick_lock import QuickLock

    async def main() -> None:
        lock = QuickLock()
        order: list[int] = []

        async def holder(n: int) -> None:
            async with lock:
                order.append(n)
                await trio.sleep(0.01)

        async with trio.open_nursery() as nursery:
            for n in range(4):
                nursery.start_soon(holder, n)
                await trio.testing.wait_all_tasks_blocked()
        assert order == [0, 1, 2, 3]
        async with trio.open_nursery() as nursery:  # a cancelled waiter leaves the queue
            nursery.start_soon(holder, 5)
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.001):
                async with lock:
                    order.append(-1)
        async with lock:
            order.append(6)
        assert order[-2:] == [5, 6]

    trio.run(main)
