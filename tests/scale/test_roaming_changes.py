"""Changes told on a roaming session's GET stream survive the process holding it: three server processes share a
real redis-server; the holder of the GET stream is SIGKILLed while resource changes go on elsewhere, and the client
resuming on another process with ``Last-Event-ID`` gets each change exactly once, in order."""

from __future__ import annotations

import functools
import json
import os
import signal
from contextlib import AsyncExitStack
from typing import Any

import pytest
import trio
from scale_peers import RedisServer, supervisor
from transport_helpers import open_raw_session

from trio_mcp import HttpTransportOptions, Server
from trio_mcp._core.sse import SSEDecoder
from trio_mcp.scale import RedisClient, RedisEventStore, RedisFanout, RedisSessionDirectory
from trio_mcp.transports._client.h11client import ClientResponse, HttpClient

VERSION = "2025-11-25"


class Session:
    """One legacy-era client, speaking raw HTTP to whichever process each request names."""

    def __init__(self, http: HttpClient) -> None:
        self.http = http
        self.id = ""
        self.next_id = 0

    def headers(self, *, accept: str = "application/json, text/event-stream") -> list[tuple[str, str]]:
        headers = [("content-type", "application/json"), ("accept", accept)]
        if self.id:
            headers += [("mcp-session-id", self.id), ("mcp-protocol-version", VERSION)]
        return headers

    async def open(self, url: str) -> None:
        self.id = dict(await open_raw_session(self.http, url, VERSION))["mcp-session-id"]

    async def post(self, url: str, method: str, params: dict[str, Any]) -> Any:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        response = await self.http.request("POST", url, headers=self.headers(), body=json.dumps(message).encode())
        assert response.status == 200, response.status
        body = b""
        while chunk := await response.receive_some():
            body += chunk
        answers = [json.loads(e.data) for e in SSEDecoder().receive_data(body) if e.data]
        return answers[-1]["result"]

    async def listen(self, url: str, last_event_id: str | None = None) -> ClientResponse:
        headers = self.headers(accept="text/event-stream")[1:]
        if last_event_id is not None:
            headers.append(("last-event-id", last_event_id))
        response = await self.http.request("GET", url, headers=headers)
        assert response.status == 200, response.status
        return response


async def events(stream: ClientResponse, decoder: SSEDecoder, count: int) -> list[tuple[str, Any]]:
    """The next ``count`` events that carry a message, with their ids."""
    found: list[tuple[str, Any]] = []
    while len(found) < count:
        chunk = await stream.receive_some()
        assert chunk, "the stream ended"
        found += [(e.id, json.loads(e.data)) for e in decoder.receive_data(chunk) if e.data]
    return found


def updated(found: list[tuple[str, Any]]) -> list[str]:
    return [message["params"]["uri"] for _, message in found if message["method"] == "notifications/resources/updated"]


#: How each process is started: sessions and events shared as roaming_app's options share them and changes
#: spread by fanout_app's own RedisFanout; or everything from ``--redis`` and changes announced the ordinary way.
SETUPS = {
    "options": ("fanout_app:server", "--options", "roaming_app:options"),
    "--redis": ("changes_app:server", "--redis"),
}


@pytest.mark.parametrize("setup", list(SETUPS))
async def test_changes_reach_a_client_whose_get_stream_holder_was_killed_once_each_in_order(
    redis_server: RedisServer, setup: str
) -> None:
    env = {"TRIO_MCP_TEST_REDIS": redis_server.url, "TRIO_MCP_TEST_REDIS_URL": redis_server.url}
    words = [*SETUPS[setup], redis_server.url] if setup == "--redis" else list(SETUPS[setup])
    with trio.fail_after(60):
        async with AsyncExitStack() as stack:
            s1, s2, s3 = [
                (await stack.enter_async_context(supervisor(words[0], "--workers", "1", *words[1:], env=env)))[0]
                for _ in range(3)
            ]
            http = await stack.enter_async_context(HttpClient())
            client = Session(http)
            await client.open(s1)
            for n in range(1, 5):
                await client.post(s3, "resources/subscribe", {"uri": f"note://{n}"})
            holder = (await client.post(s2, "tools/call", {"name": "touch", "arguments": {"uri": "note://0"}}))[
                "structuredContent"
            ]
            stream, decoder = await client.listen(s2), SSEDecoder()

            await client.post(s3, "tools/call", {"name": "touch", "arguments": {"uri": "note://1"}})
            first = await events(stream, decoder, 1)
            assert updated(first) == ["note://1"]

            os.kill(holder["result"], signal.SIGKILL)
            await client.post(s3, "tools/call", {"name": "touch", "arguments": {"uri": "note://2"}})  # at once
            await trio.sleep(3.5)  # the holder's heartbeat has lapsed by now
            await client.post(s3, "tools/call", {"name": "touch", "arguments": {"uri": "note://3"}})

            resumed, decoder = await client.listen(s1, first[-1][0]), SSEDecoder()
            replayed = await events(resumed, decoder, 2)
            assert updated(replayed) == ["note://2", "note://3"]
            await client.post(s3, "tools/call", {"name": "touch", "arguments": {"uri": "note://4"}})
            live = await events(resumed, decoder, 1)
            assert updated(live) == ["note://4"]  # not a second note://2 or note://3 first
            with trio.move_on_after(1):  # nothing doubled follows
                extra = await events(resumed, decoder, 1)
                raise AssertionError(f"an extra event: {extra}")
            ids = [event_id for event_id, _ in first + replayed + live]
            assert len(set(ids)) == 4 and all(ids), ids


class Reordering(RedisSessionDirectory):
    """Routes the GET stream's second event after its third, as pub/sub from two processes may."""

    def __init__(self, redis: RedisClient) -> None:
        super().__init__(redis)
        self.routed = 0
        self.held: Any = None

    async def publish(self, session_id: str, message: Any) -> None:
        if message.get("kind") == "event" and message.get("stream") == "0":
            self.routed += 1
            if self.routed == 2:
                self.held = message
                return
            await super().publish(session_id, message)
            if self.held is not None:
                await super().publish(session_id, self.held)
                self.held = None
            return
        await super().publish(session_id, message)


async def test_changes_routed_out_of_order_reach_the_get_stream_in_the_order_stored(
    redis_server: RedisServer,
) -> None:
    """In one test process, two servers share a real Redis; a's changes reach the GET stream held by b through
    routing that swaps two of them: the client still gets each once, in the order the store keeps (the order
    a resumption elsewhere would replay)."""
    with trio.fail_after(30):
        async with (
            RedisClient(redis_server.url, retries=0) as redis,
            HttpClient() as http,
            trio.open_nursery() as nursery,
        ):
            urls = []
            servers = [Server(name) for name in "ab"]
            for server in servers:
                server.resource("note://{name}")(lambda name: name)
                options = HttpTransportOptions(event_store=RedisEventStore(redis), session_directory=Reordering(redis))
                port = await nursery.start(functools.partial(server.serve_http, "127.0.0.1", 0, options=options))
                urls.append(f"http://127.0.0.1:{port}/mcp")
            a, b = urls
            fanout = RedisFanout(servers[0], redis)
            await nursery.start(fanout.run)
            client = Session(http)
            await client.open(a)
            for n in range(4):
                await client.post(a, "resources/subscribe", {"uri": f"note://{n}"})
            stream, decoder = await client.listen(b), SSEDecoder()
            told: list[tuple[str, Any]] = []
            for n in range(4):
                await fanout.resource_updated(f"note://{n}")
                if n != 1:  # the second is held back until the third is routed
                    told += await events(stream, decoder, 1 if n != 2 else 2)
            assert updated(told) == ["note://0", "note://1", "note://2", "note://3"]
            with trio.move_on_after(0.5):  # nothing doubled follows
                extra = await events(stream, decoder, 1)
                raise AssertionError(f"an extra event: {extra}")
            nursery.cancel_scope.cancel()
