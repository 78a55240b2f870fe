"""The session engine over an in-memory pair: correlation, cancellation both ways, progress, timeouts,
framing errors and shutdown. One side is a real ``Session``; the other is a raw peer that reads and writes
JSON-RPC by hand, so every assertion is about what goes on the wire."""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import pytest
import trio
import trio.testing

from trio_mcp._session import InboundRequest, Session
from trio_mcp.errors import ConnectionClosed, McpError, RequestTimeout
from trio_mcp.transports import memory_stream_pair

Handler = Callable[[InboundRequest], Awaitable[Any]]


class Handlers:
    """A RequestHandler whose methods are plain async functions in a dict."""

    inline_methods = frozenset({"initialize"})

    def __init__(self, **methods: Handler) -> None:
        self.methods = {name.replace("__", "/"): fn for name, fn in methods.items()}
        self.notifications: list[tuple[str, Any]] = []

    async def handle_request(self, request: InboundRequest) -> Any:
        try:
            fn = self.methods[request.method]
        except KeyError:
            raise McpError(-32601, f"Method not found: {request.method}") from None
        return await fn(request)

    async def handle_notification(self, method: str, params: Any) -> None:
        self.notifications.append((method, params))


async def start_session(nursery: trio.Nursery, handlers: Handlers, **options: Any) -> tuple[Session, Any]:
    ours, theirs = memory_stream_pair()
    session = Session(ours, handlers, **options)
    await nursery.start(session.run)
    return session, theirs


async def echo(request: InboundRequest) -> Any:
    return {"echo": request.params}


async def test_request_and_response_round_trip(nursery: trio.Nursery) -> None:
    session, peer = await start_session(nursery, Handlers(echo=echo))
    await peer.send({"jsonrpc": "2.0", "id": 7, "method": "echo", "params": {"x": 1}})
    assert await peer.receive() == {"jsonrpc": "2.0", "id": 7, "result": {"echo": {"x": 1}}}
    await peer.send({"jsonrpc": "2.0", "id": "abc", "method": "nope"})
    assert await peer.receive() == {
        "jsonrpc": "2.0",
        "id": "abc",
        "error": {"code": -32601, "message": "Method not found: nope"},
    }


async def test_outbound_request_gets_its_own_response(nursery: trio.Nursery) -> None:
    session, peer = await start_session(nursery, Handlers())
    results: dict[int, Any] = {}

    async def call(n: int) -> None:
        results[n] = await session.request("double", {"n": n})

    async with trio.open_nursery() as calls:
        for n in range(3):
            calls.start_soon(call, n)
        requests = [await peer.receive() for _ in range(3)]
        for request in reversed(requests):  # answer out of order
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": request["params"]["n"] * 2})
    assert results == {0: 0, 1: 2, 2: 4}
    assert session.statistics().outbound_pending == 0


async def test_peer_cancel_cancels_handler_and_sends_no_response(nursery: trio.Nursery) -> None:
    started = trio.Event()
    outcome: list[str] = []

    async def slow(request: InboundRequest) -> Any:
        started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            outcome.append("cancelled")
            raise

    session, peer = await start_session(nursery, Handlers(slow=slow, echo=echo))
    await peer.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
    await started.wait()
    await peer.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "bored"}}
    )
    await peer.send({"jsonrpc": "2.0", "id": 2, "method": "echo"})
    # The next thing on the wire is the answer to 2: nothing was sent for the cancelled request.
    assert await peer.receive() == {"jsonrpc": "2.0", "id": 2, "result": {"echo": None}}
    assert outcome == ["cancelled"]
    assert session.statistics().inbound_in_flight == 0


async def test_cancel_for_unknown_id_and_for_initialize_is_ignored(nursery: trio.Nursery) -> None:
    gate = trio.Event()

    async def initialize(request: InboundRequest) -> Any:
        await gate.wait()
        return {"ok": True}

    session, peer = await start_session(nursery, Handlers(initialize=initialize, echo=echo))
    await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}})
    await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}})
    await peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize"})
    await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    await trio.testing.wait_all_tasks_blocked()
    gate.set()
    assert await peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}


async def test_caller_cancel_sends_cancelled_once_and_drops_late_response(nursery: trio.Nursery) -> None:
    session, peer = await start_session(nursery, Handlers())
    with trio.move_on_after(0.5) as scope:  # the caller gives up; no answer comes
        async with trio.open_nursery() as inner:
            inner.start_soon(session.request, "slow")
            request = await peer.receive()
            inner.cancel_scope.cancel()
    assert not scope.cancelled_caught
    cancel = await peer.receive()
    assert cancel == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request["id"], "reason": "cancelled by the caller"},
    }
    await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})  # late: dropped
    await trio.testing.wait_all_tasks_blocked()
    assert session.statistics().outbound_pending == 0


async def test_timeout_raises_and_notifies(nursery: trio.Nursery, autojump_clock: trio.testing.MockClock) -> None:
    session, peer = await start_session(nursery, Handlers())
    with pytest.raises(RequestTimeout, match="slow got no response within 3 s"):
        await session.request("slow", timeout=3)
    request = await peer.receive()
    cancel = await peer.receive()
    assert cancel["params"]["requestId"] == request["id"]
    assert cancel["method"] == "notifications/cancelled"
    assert cancel["params"]["reason"] == "request timed out"


async def test_progress_resets_timeout_up_to_a_maximum(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    session, peer = await start_session(nursery, Handlers())
    seen: list[float] = []
    result: list[Any] = []

    async def call() -> None:
        result.append(
            await session.request(
                "work",
                timeout=2,
                reset_timeout_on_progress=True,
                max_total_timeout=100,
                on_progress=lambda p: seen.append(p["progress"]),
            )
        )

    nursery.start_soon(call)
    request = await peer.receive()
    token = request["params"]["_meta"]["progressToken"]
    start = trio.current_time()
    for step in range(1, 6):  # 5 updates 1.5 s apart: 7.5 s in all, beyond the 2 s timeout
        await trio.sleep(1.5)
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": step}}
        )
    # a non-increasing update is dropped
    await peer.send(
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 2}}
    )
    await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"done": True}})
    await trio.testing.wait_all_tasks_blocked()
    assert result == [{"done": True}]
    assert seen == [1, 2, 3, 4, 5]
    assert trio.current_time() - start >= 7.5


async def test_progress_callback_exceptions_are_isolated(nursery: trio.Nursery) -> None:
    session, peer = await start_session(nursery, Handlers())

    def explode(params: Any) -> None:
        raise RuntimeError("callback bug")

    async def answer() -> None:
        request = await peer.receive()
        token = request["params"]["_meta"]["progressToken"]
        await peer.send(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}}
        )
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "fine"})

    nursery.start_soon(answer)
    assert await session.request("work", on_progress=explode) == "fine"


async def test_handler_reports_progress_with_the_peers_token(nursery: trio.Nursery) -> None:
    async def work(request: InboundRequest) -> Any:
        for step in (1, 2, 2, 3):  # the repeated 2 is not sent
            await request.report_progress(step, total=3, message=f"step {step}")
        return "done"

    session, peer = await start_session(nursery, Handlers(work=work))
    await peer.send({"jsonrpc": "2.0", "id": 5, "method": "work", "params": {"_meta": {"progressToken": "tok"}}})
    messages = [await peer.receive() for _ in range(4)]
    assert [m["params"]["progress"] for m in messages[:3]] == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "tok" for m in messages[:3])
    assert messages[0]["params"]["message"] == "step 1"
    assert messages[3] == {"jsonrpc": "2.0", "id": 5, "result": "done"}


async def test_closing_transport_fails_pending_requests_at_once(nursery: trio.Nursery) -> None:
    session, peer = await start_session(nursery, Handlers())

    async def close_soon() -> None:
        await peer.receive()
        await peer.aclose()

    nursery.start_soon(close_soon)
    with pytest.raises(ConnectionClosed):
        await session.request("never")
    with pytest.raises(ConnectionClosed):
        await session.request("after close")
    assert session.closed


@pytest.mark.parametrize(
    ("raw", "code", "message_part"),
    [
        (b'{"jsonrpc":"2.0","id":1,', -32700, "Parse error"),
        (b"\xff\xfe not utf8", -32700, "UTF-8"),
        (b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":NaN}}', -32700, "NaN"),
        (b"[" * 100_000, -32700, "Parse error"),
        (b"42", -32600, "expected a JSON object, got number"),
        (b'"x"', -32600, "got string"),
        (b"{}", -32600, '"jsonrpc" must be "2.0"'),
        (b'{"jsonrpc":"1.0","id":1,"method":"echo"}', -32600, '"jsonrpc" must be "2.0"'),
        (b'{"jsonrpc":"2.0","id":null,"method":"echo"}', -32600, "got null"),
        (b'{"jsonrpc":"2.0","id":true,"method":"echo"}', -32600, "got boolean"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"echo"}', -32600, "got number"),
        (b'{"jsonrpc":"2.0","id":{},"method":"echo"}', -32600, "got object"),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', -32600, '"method" must be a string'),
        (b'{"jsonrpc":"2.0","id":1,"method":"echo","params":[1]}', -32600, '"params" must be an object'),
        (b'[{"jsonrpc":"2.0","id":1,"method":"echo"}]', -32600, "batches are not supported"),
        (b"[]", -32600, "empty batch"),
    ],
)
async def test_framing_errors_are_answered_and_session_keeps_serving(
    nursery: trio.Nursery, raw: bytes, code: int, message_part: str
) -> None:
    session, peer = await start_session(nursery, Handlers(echo=echo))
    await peer.send_raw(raw)
    reply = await peer.receive()
    assert reply["error"]["code"] == code
    assert message_part in reply["error"]["message"]
    await peer.send({"jsonrpc": "2.0", "id": 2, "method": "echo"})
    assert await peer.receive() == {"jsonrpc": "2.0", "id": 2, "result": {"echo": None}}


async def test_batches_when_the_revision_allows_them(nursery: trio.Nursery) -> None:
    session, peer = await start_session(nursery, Handlers(echo=echo))
    session.accept_batches = True
    await peer.send(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"a": 1}},
            {"jsonrpc": "2.0", "method": "notifications/hello"},
            {"jsonrpc": "2.0", "id": 2, "method": "missing"},
            {"jsonrpc": "2.0", "id": 3, "method": "initialize"},
            17,
        ]
    )
    reply = await peer.receive()
    assert isinstance(reply, list)
    by_id = {item["id"]: item for item in reply}
    assert by_id[1]["result"] == {"echo": {"a": 1}}
    assert by_id[2]["error"]["code"] == -32601
    assert by_id[3]["error"]["message"] == "Invalid Request: initialize must not be batched"
    assert by_id[None]["error"]["code"] == -32600
    assert len(reply) == 4


async def test_duplicate_in_flight_id_is_rejected_without_disturbing_the_first(nursery: trio.Nursery) -> None:
    gate = trio.Event()

    async def slow(request: InboundRequest) -> Any:
        await gate.wait()
        return "first"

    session, peer = await start_session(nursery, Handlers(slow=slow))
    await peer.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
    await peer.send({"jsonrpc": "2.0", "id": 1, "method": "slow"})
    rejection = await peer.receive()
    assert rejection["error"]["code"] == -32600
    assert "already in use" in rejection["error"]["message"]
    gate.set()
    assert await peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": "first"}


async def test_in_flight_bound_rejects_excess_requests(nursery: trio.Nursery) -> None:
    gate = trio.Event()

    async def slow(request: InboundRequest) -> Any:
        await gate.wait()
        return request.id

    session, peer = await start_session(nursery, Handlers(slow=slow), max_in_flight=2)
    for n in range(3):
        await peer.send({"jsonrpc": "2.0", "id": n, "method": "slow"})
    busy = await peer.receive()
    assert busy["id"] == 2 and busy["error"]["code"] == -32010  # its own code, not ConnectionClosed's -32000
    assert "max_in_flight" in busy["error"]["message"]
    gate.set()
    assert sorted([(await peer.receive())["result"] for _ in range(2)]) == [0, 1]


async def test_handler_exception_becomes_internal_error(nursery: trio.Nursery) -> None:
    async def broken(request: InboundRequest) -> Any:
        raise ValueError("disk on fire")

    session, peer = await start_session(nursery, Handlers(broken=broken, echo=echo))
    await peer.send({"jsonrpc": "2.0", "id": 1, "method": "broken"})
    reply = await peer.receive()
    assert reply["error"]["code"] == -32603
    message = reply["error"]["message"]
    assert message.startswith("Internal error: the handler for broken (request id 1) failed (error id ")
    assert "disk on fire" not in message  # the text stays in the log, with the same id
    await peer.send({"jsonrpc": "2.0", "id": 2, "method": "echo"})
    assert (await peer.receive())["id"] == 2


async def test_unknown_response_ids_are_dropped(nursery: trio.Nursery) -> None:
    session, peer = await start_session(nursery, Handlers(echo=echo))
    await peer.send({"jsonrpc": "2.0", "id": 12345, "result": {}})
    await peer.send({"jsonrpc": "2.0", "id": 3, "result": {}, "error": {"code": 1, "message": "both"}})
    await peer.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "you sent junk"}})
    await peer.send({"jsonrpc": "2.0", "id": 2, "method": "echo"})
    assert (await peer.receive())["id"] == 2  # nothing was answered to the responses


async def test_peer_cancel_in_signal_mode_lets_handler_observe(nursery: trio.Nursery) -> None:
    observed: list[str | None] = []

    async def cooperative(request: InboundRequest) -> Any:
        await request.cancel_requested.wait()
        observed.append(request.cancel_reason)
        return "ignored"

    session, peer = await start_session(nursery, Handlers(coop=cooperative, echo=echo), peer_cancel_mode="signal")
    await peer.send({"jsonrpc": "2.0", "id": 1, "method": "coop"})
    await trio.testing.wait_all_tasks_blocked()
    await peer.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "stop"}}
    )
    await peer.send({"jsonrpc": "2.0", "id": 2, "method": "echo"})
    assert (await peer.receive())["id"] == 2
    assert observed == ["stop"]
