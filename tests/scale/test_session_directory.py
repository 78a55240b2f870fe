"""``RedisSessionDirectory`` in one test process: two HTTP servers (as two processes would be, each with its own
directory and origin) share a real redis-server; requests of one session alternate between them."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from scale_peers import RedisServer
from transport_helpers import INITIALIZED, initialize_request
from waiting import wait_until

from trio_mcp import Context, Server
from trio_mcp._core.session_record import SessionRecord, SessionState
from trio_mcp._core.sse import SSEDecoder
from trio_mcp.errors import INTERNAL_ERROR
from trio_mcp.scale import RedisClient, RedisEventStore, RedisSessionDirectory
from trio_mcp.transports._client.h11client import HttpClient
from trio_mcp.transports.streamable_http import HttpTransportOptions

VERSION = "2025-06-18"


def make_server(name: str) -> Server:
    server = Server(name)

    @server.tool()
    async def where(ctx: Context) -> str:
        """Log at debug level and say which server answered, with what the client declared."""
        await ctx.log("debug", "a debug record")
        return f"{name} {ctx.client_info.name if ctx.client_info else None} {ctx.client_capabilities.elicitation is not None}"

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client for a name."""
        answer = await ctx.elicit("name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        return f"{name} heard {(answer.content or {}).get('name')}"

    @server.tool()
    async def count(ctx: Context) -> str:
        """Twenty progress events, a little apart."""
        for step in range(1, 21):
            await ctx.report_progress(step, 20)
            await trio.sleep(0.02)
        return f"{name} counted"

    @server.resource("note://one")
    def one() -> str:
        return "one"

    return server


class LosingEvents(RedisSessionDirectory):
    """Loses every routed event, as pub/sub may (at most once): the store must make up for it."""

    async def publish(self, session_id: str, message: Any) -> None:
        if message.get("kind") != "event":
            await super().publish(session_id, message)


@asynccontextmanager
async def two_servers(
    redis_server: RedisServer, directory: type[RedisSessionDirectory] = RedisSessionDirectory
) -> AsyncIterator[tuple[list[str], HttpClient]]:
    async with RedisClient(redis_server.url, retries=0, connect_timeout=0.5) as redis, HttpClient() as http:
        async with trio.open_nursery() as nursery:
            urls = []
            for name in ("a", "b"):
                options = HttpTransportOptions(event_store=RedisEventStore(redis), session_directory=directory(redis))
                server = make_server(name)
                port = await nursery.start(
                    lambda task_status, s=server, o=options: s.serve_http(
                        "127.0.0.1", 0, options=o, task_status=task_status
                    )
                )
                urls.append(f"http://127.0.0.1:{port}/mcp")
            yield urls, http
            nursery.cancel_scope.cancel()


async def post(http: HttpClient, url: str, message: Any, session_id: str | None = None) -> tuple[int, Any, Any]:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if session_id is not None:
        headers |= {"mcp-session-id": session_id, "mcp-protocol-version": VERSION}
    response = await http.request("POST", url, headers=list(headers.items()), body=json.dumps(message).encode())
    body = b""
    while chunk := await response.receive_some():
        body += chunk
    text = body.decode()
    events = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:") and line[5:].strip()]
    if not events and text.strip():
        events = [json.loads(text)]
    return response.status, response.headers, events


def request(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


async def debug_records(http: HttpClient, url: str, session: str, *, within: float = 10.0) -> list[Any]:
    """The log records of a ``where`` call on ``url``, called until there are some: the debug level set on the
    other server reaches this one through Redis pub/sub, within moments."""

    async def records() -> list[Any]:
        _, _, events = await post(http, url, request(100, "tools/call", {"name": "where", "arguments": {}}), session)
        return [event["params"]["data"] for event in events if event.get("method") == "notifications/message"]

    return await wait_until(records, within=within, interval=0.05)


async def initialize(http: HttpClient, url: str, capabilities: dict[str, Any], *, version: str = VERSION) -> str:
    """Open a session at ``url``; its id."""
    status, headers, _ = await post(
        http, url, initialize_request(version, id=1, capabilities=capabilities, client="roamer")
    )
    assert status == 200
    return str(headers["mcp-session-id"])


async def test_what_a_session_negotiated_and_set_roams_with_it(redis_server: RedisServer) -> None:
    with trio.fail_after(30):
        async with two_servers(redis_server) as ((a, b), http):
            session = await initialize(http, a, {"elicitation": {}})
            assert (await post(http, b, INITIALIZED, session))[0] == 202

            # What initialize settled is known on b, which never saw it.
            _, _, events = await post(http, b, request(2, "tools/call", {"name": "where", "arguments": {}}), session)
            assert events[-1]["result"]["content"][0]["text"] == "b roamer True"
            assert not any(event.get("method") == "notifications/message" for event in events)  # default level

            # A log level set on b holds on a (b tells a through Redis pub/sub, within moments).
            assert (await post(http, b, request(3, "logging/setLevel", {"level": "debug"}), session))[0] == 200
            assert await debug_records(http, a, session) == ["a debug record"]

            # DELETE on a ends the session on b too.
            response = await http.request(
                "DELETE", a, headers=[("mcp-session-id", session), ("mcp-protocol-version", VERSION)]
            )
            assert response.status == 200

            async def ended_on_b() -> bool:
                return (await post(http, b, request(5, "ping", {}), session))[0] == 404

            await wait_until(ended_on_b, within=5, interval=0.05)
            async with RedisClient(redis_server.url) as redis:
                # Nothing of the session is left in Redis, once b has dropped what it recorded of the session
                # before it heard of the end (a ping served there meanwhile).
                async def nothing_left() -> bool:
                    return await redis.execute("KEYS", f"*{session}*") == []

                await wait_until(nothing_left, within=5, interval=0.02)


async def test_without_redis_a_session_held_elsewhere_is_a_clear_503_and_recovers(redis_server: RedisServer) -> None:
    with trio.fail_after(40):
        async with two_servers(redis_server) as ((a, b), http):
            session = await initialize(http, a, {})
            redis_server.stop()
            status, _, events = await post(http, b, request(2, "ping", {}), session)
            assert status == 503
            assert events[0]["error"]["code"] == INTERNAL_ERROR and events[0]["id"] == 2
            status, _, events = await post(http, a, request(3, "ping", {}), session)
            assert (status, events) == (200, [{"jsonrpc": "2.0", "id": 3, "result": {}}])  # held here: unaffected
            redis_server.start()
            status, _, events = await post(http, b, request(4, "ping", {}), session)
            assert status == 200 and events[0]["result"] == {}


async def test_in_a_redis_outage_every_request_needing_it_is_a_503_to_retry_initialize_included(
    redis_server: RedisServer,
) -> None:
    """Redis is killed: opening a session, serving one held elsewhere, changing what a session's record keeps,
    resuming a stream and ending a session all answer 503 with a ``Retry-After`` (never a JSON-RPC error with
    200); once Redis is back a new session opens."""
    unavailable = {"code": INTERNAL_ERROR, "message": "Sessions are unavailable; try again later"}
    with trio.fail_after(40):
        async with two_servers(redis_server) as ((a, b), http):
            session = await initialize(http, a, {})
            redis_server.stop(signal.SIGKILL)
            status, headers, events = await post(http, a, initialize_request(VERSION, id=1))
            assert (status, events) == (503, [{"jsonrpc": "2.0", "id": 1, "error": unavailable}])
            assert headers["retry-after"] == "1" and "mcp-session-id" not in headers
            status, headers, events = await post(http, b, request(2, "ping", {}), session)
            assert (status, events[0]["error"], headers["retry-after"]) == (503, unavailable, "1")
            for number, method, params in (
                (4, "resources/subscribe", {"uri": "note://one"}),
                (5, "logging/setLevel", {"level": "debug"}),
            ):
                status, headers, events = await post(http, a, request(number, method, params), session)  # held by a
                assert (status, events, headers["retry-after"]) == (
                    503,
                    [{"jsonrpc": "2.0", "id": number, "error": unavailable}],
                    "1",
                )
            resumed = await http.request(
                "GET",
                a,
                headers=[
                    ("accept", "text/event-stream"),
                    ("mcp-session-id", session),
                    ("mcp-protocol-version", VERSION),
                    ("last-event-id", "x.1/1-0"),
                ],
            )
            assert (resumed.status, resumed.headers["retry-after"]) == (503, "1")
            await resumed.aclose()
            ended = await http.request(
                "DELETE", a, headers=[("mcp-session-id", session), ("mcp-protocol-version", VERSION)]
            )
            assert (ended.status, ended.headers["retry-after"]) == (503, "1")
            await ended.aclose()
            status, _, events = await post(http, a, request(3, "ping", {}), session)
            assert (status, events) == (
                200,
                [{"jsonrpc": "2.0", "id": 3, "result": {}}],
            )  # not ended: it was not forgotten
            redis_server.start()
            await initialize(http, b, {})
            ended = await http.request(
                "DELETE", a, headers=[("mcp-session-id", session), ("mcp-protocol-version", VERSION)]
            )
            assert ended.status == 200
            await ended.aclose()


async def test_an_answer_to_one_process_request_reaches_it_through_another(redis_server: RedisServer) -> None:
    """The client's answer to an elicitation a sends is posted to b; b routes it to a, whose call then ends."""
    with trio.fail_after(30):
        async with two_servers(redis_server) as ((a, b), http):
            session = await initialize(http, a, {"elicitation": {}})
            await post(http, a, INITIALIZED, session)
            call = json.dumps(request(2, "tools/call", {"name": "ask", "arguments": {}})).encode()
            stream = await http.request(
                "POST",
                a,
                headers=[
                    ("content-type", "application/json"),
                    ("accept", "application/json, text/event-stream"),
                    ("mcp-session-id", session),
                    ("mcp-protocol-version", VERSION),
                ],
                body=call,
            )
            decoder = SSEDecoder()
            received: list[Any] = []

            async def until(predicate: Any) -> Any:
                while True:
                    for message in received:
                        if predicate(message):
                            return message
                    chunk = await stream.receive_some()
                    assert chunk, "the stream ended early"
                    received.extend(json.loads(event.data) for event in decoder.receive_data(chunk) if event.data)

            asked = await until(lambda message: message.get("method") == "elicitation/create")
            assert isinstance(asked["id"], str)  # prefixed with a's process id: unique across processes
            answer = {"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada"}}}
            assert (await post(http, b, answer, session))[0] == 202
            result = await until(lambda message: message.get("id") == 2)
            assert result["result"]["content"][0]["text"] == "a heard Ada"


async def test_a_stream_resumed_elsewhere_gets_every_event_even_when_routing_loses_them(
    redis_server: RedisServer,
) -> None:
    """The client leaves a's stream mid-call and resumes on b; a's events never reach b through pub/sub, yet b
    sends every one of them from the store, once and in order, and the answer ends the stream."""
    with trio.fail_after(30):
        async with two_servers(redis_server, LosingEvents) as ((a, b), http):
            session = await initialize(http, a, {}, version="2025-11-25")
            headers = [
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-session-id", session),
                ("mcp-protocol-version", "2025-11-25"),
            ]
            call = request(2, "tools/call", {"name": "count", "arguments": {}, "_meta": {"progressToken": "p"}})
            first = await http.request("POST", a, headers=headers, body=json.dumps(call).encode())
            decoder = SSEDecoder()
            seen: list[tuple[str, Any]] = []
            while len([m for _, m in seen if m]) < 3:
                seen += [
                    (e.id, json.loads(e.data) if e.data else None)
                    for e in decoder.receive_data(await first.receive_some())
                ]
            await first.aclose()
            resumed = await http.request(
                "GET", b, headers=[*headers[2:], ("accept", "text/event-stream"), ("last-event-id", seen[-1][0])]
            )
            assert resumed.status == 200
            decoder = SSEDecoder()
            while chunk := await resumed.receive_some():
                seen += [(e.id, json.loads(e.data) if e.data else None) for e in decoder.receive_data(chunk)]
    messages = [message for _, message in seen if message]
    assert [m["params"]["progress"] for m in messages if m.get("method")] == list(range(1, 21))
    assert messages[-1]["id"] == 2 and messages[-1]["result"]["content"][0]["text"] == "a counted"


def test_options_are_checked_at_the_call() -> None:
    redis = RedisClient("redis://127.0.0.1:1/0")
    for options, named in (
        ({"ttl": 0}, "ttl"),
        ({"ttl": float("inf")}, "ttl"),
        ({"heartbeat": 0.0}, "heartbeat"),
        ({"heartbeat": True}, "heartbeat"),
        ({"prefix": ""}, "prefix"),
        ({"prefix": "a{b}"}, "prefix"),
    ):
        with pytest.raises(ValueError, match=named):
            RedisSessionDirectory(redis, **options)
    assert RedisSessionDirectory(redis).origin != RedisSessionDirectory(redis).origin


async def test_a_malformed_answer_is_refused_and_the_session_goes_on(redis_server: RedisServer) -> None:
    with trio.fail_after(30):
        async with two_servers(redis_server) as ((a, b), http):
            session = await initialize(http, a, {})
            for bad in ({"jsonrpc": "2.0", "id": [1], "result": {}}, {"jsonrpc": "2.0", "id": {"x": 1}, "error": {}}):
                status, _, _ = await post(http, b, bad, session)
                assert status in (202, 400), status
            for url in (a, b):
                status, _, events = await post(http, url, request(7, "ping", {}), session)
                assert (status, events[-1]["result"]) == (200, {})


async def test_servers_started_while_redis_is_down_serve_and_roam_once_it_is_back(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    redis_server.stop()
    with trio.fail_after(40):
        async with two_servers(redis_server) as ((a, b), http):
            # Both servers' first subscription has failed (it used to end the server), and they still serve.
            await wait_until(
                lambda: sum("session routing waits for Redis" in r.getMessage() for r in caplog.records) >= 2,
                within=30,
            )
            for url in (a, b):
                probe = await http.request("GET", url.replace("/mcp", "/healthz"))
                assert probe.status == 200
                await probe.aclose()
            redis_server.start()
            session = await initialize(http, a, {})
            assert (await post(http, b, request(2, "logging/setLevel", {"level": "debug"}), session))[0] == 200
            # once a has subscribed again, b's change reaches it
            assert await debug_records(http, a, session, within=30) == ["a debug record"]


async def test_the_record_redis_keeps_reads_back_and_one_from_older_code_roams(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A record is one JSON text in Redis, read back as written; a session whose record an older server wrote
    (no ``version``) is taken over by this one; an unreadable record is a session not found, logged."""
    with trio.fail_after(30):
        async with RedisClient(redis_server.url, retries=0, connect_timeout=0.5) as redis:
            directory = RedisSessionDirectory(redis, prefix="records")
            record = SessionRecord(caller="k", state=SessionState(protocol_version=VERSION, subscriptions=("a://b",)))
            await directory.save("s1", record)
            raw = await redis.execute("GET", "records:{s1}:record")
            assert SessionRecord.loads(raw) == record == await directory.load("s1")

        async with two_servers(redis_server) as ((a, b), http):
            session = await initialize(http, a, {"elicitation": {}})
            async with RedisClient(redis_server.url) as redis:
                key = f"trio_mcp:sessions:{{{session}}}:record"
                older = json.loads(await redis.execute("GET", key))
                del older["version"], older["state"]["logLevel"], older["state"]["subscriptions"]
                await redis.execute("SET", key, json.dumps(older))
                _, _, events = await post(
                    http, b, request(2, "tools/call", {"name": "where", "arguments": {}}), session
                )
                assert events[-1]["result"]["content"][0]["text"] == "b roamer True"

                other = await initialize(http, a, {})
                await redis.execute("SET", f"trio_mcp:sessions:{{{other}}}:record", '{"principal": 3}')
                status, _, _ = await post(http, b, request(3, "ping", {}), other)
                assert status == 404
                assert any("unreadable" in line and other[:8] in line for line in caplog.messages)
