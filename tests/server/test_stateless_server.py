"""The 2026-07-28 (modern) revision on the server, spoken by a raw peer over an in-memory stream: the
per-request envelope, server/discover, resultType and caching hints, the modern error codes, multi
round-trip requests with signed requestState, subscriptions/listen, and both eras on one connection."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from trio_mcp import Context, Server
from trio_mcp.server._connection import ServerConnection
from trio_mcp.transports import memory_stream_pair

from transport_helpers import handshake  # isort: skip

MODERN = "2026-07-28"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


def envelope(capabilities: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities if capabilities is not None else {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    meta.update(extra)
    return meta


def request(id: int, method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    params = dict(params or {})
    params["_meta"] = envelope(**meta)
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def make_server(**options: Any) -> Server:
    server = Server("stateless", version="2.0.0", instructions="be kind", **options)

    @server.tool()
    async def greet(ctx: Context) -> str:
        """Ask the user's name, then greet them."""
        answer = await ctx.elicit(
            "What is your name?",
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            key="user_name",
        )
        return f"Hello, {(answer.content or {})['name']}!"

    @server.tool()
    async def interview(topic: str, ctx: Context) -> str:
        """Ask the user, then the model: two rounds of input."""
        who = await ctx.elicit("Name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        sampled = await ctx.sample(f"Say something about {topic}", max_tokens=20)
        text = getattr(sampled.content, "text", "?")
        return f"{(who.content or {}).get('name')}: {text}"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        """Log and report progress."""
        await ctx.debug("details")
        await ctx.info("working")
        await ctx.report_progress(1, total=1)
        return "done"

    @server.resource("test://here", mime_type="text/plain")
    def here() -> str:
        return "here"

    @server.prompt()
    def hello() -> str:
        """Say hello."""
        return "hello"

    return server


async def start(nursery: trio.Nursery, server: Server, **options: Any) -> Any:
    ours, theirs = memory_stream_pair()
    await nursery.start(ServerConnection(server, ours, **options).serve)
    return theirs


async def call(peer: Any, message: dict[str, Any]) -> dict[str, Any]:
    await peer.send(message)
    while True:
        reply = await peer.receive()
        if "id" in reply:
            return reply


async def test_discover_and_the_result_envelope(nursery: trio.Nursery) -> None:
    peer = await start(nursery, make_server(cache_ttl_ms=5000))
    result = (await call(peer, request(1, "server/discover")))["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"][0] == MODERN and "2025-11-25" in result["supportedVersions"]
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts"}
    assert result["instructions"] == "be kind"
    assert result["_meta"][SERVER_INFO] == {"name": "stateless", "version": "2.0.0"}
    assert (result["ttlMs"], result["cacheScope"]) == (5000, "public")
    tools = (await call(peer, request(2, "tools/list")))["result"]
    assert [t["name"] for t in tools["tools"]] == ["greet", "interview", "chatty"]
    assert tools["resultType"] == "complete" and tools["ttlMs"] == 5000 and SERVER_INFO in tools["_meta"]
    read = (await call(peer, request(3, "resources/read", {"uri": "test://here"})))["result"]
    assert read["contents"][0]["text"] == "here" and read["ttlMs"] == 5000
    prompt = (await call(peer, request(4, "prompts/get", {"name": "hello"})))["result"]
    assert prompt["resultType"] == "complete" and "ttlMs" not in prompt


@pytest.mark.parametrize(
    ("meta", "code", "data"),
    [
        (
            {"io.modelcontextprotocol/protocolVersion": "2099-01-01", "io.modelcontextprotocol/clientCapabilities": {}},
            -32022,
            {"supported": [MODERN], "requested": "2099-01-01"},
        ),
        ({"io.modelcontextprotocol/protocolVersion": MODERN}, -32602, None),
        (
            {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": []},
            -32602,
            None,
        ),
    ],
)
async def test_envelope_errors(nursery: trio.Nursery, meta: dict[str, Any], code: int, data: Any) -> None:
    peer = await start(nursery, make_server())
    reply = await call(peer, {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta}})
    assert reply["id"] == 7 and reply["error"]["code"] == code
    if data is not None:
        assert reply["error"]["data"] == data


async def test_modern_only_connection_requires_the_envelope(nursery: trio.Nursery) -> None:
    peer = await start(nursery, make_server(), modern_only=True)
    reply = await call(peer, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert reply["error"]["code"] == -32602


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe", "nope/nope"]
)
async def test_methods_the_revision_removed_are_not_found(nursery: trio.Nursery, method: str) -> None:
    peer = await start(nursery, make_server())
    reply = await call(peer, request(3, method, {"uri": "test://here", "level": "info"}))
    assert reply["id"] == 3 and reply["error"]["code"] == -32601


async def test_resource_not_found_is_invalid_params(nursery: trio.Nursery) -> None:
    peer = await start(nursery, make_server())
    reply = await call(peer, request(1, "resources/read", {"uri": "test://nonexistent"}))
    assert reply["error"]["code"] == -32602 and reply["error"]["data"] == {"uri": "test://nonexistent"}


async def test_multi_round_trip_elicitation(nursery: trio.Nursery) -> None:
    peer = await start(nursery, make_server())
    caps = {"elicitation": {}}
    first = (await call(peer, request(1, "tools/call", {"name": "greet"}, capabilities=caps)))["result"]
    assert first["resultType"] == "input_required"
    assert first["inputRequests"] == {
        "user_name": {
            "method": "elicitation/create",
            "params": {
                "message": "What is your name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            },
        }
    }
    assert "ttlMs" not in first
    retry = {
        "name": "greet",
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}},
        "requestState": first["requestState"],
    }
    second = (await call(peer, request(2, "tools/call", retry, capabilities=caps)))["result"]
    assert second["resultType"] == "complete"
    assert second["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_two_rounds_carry_earlier_answers_in_request_state(nursery: trio.Nursery) -> None:
    peer = await start(nursery, make_server())
    caps = {"elicitation": {}, "sampling": {}}
    params: dict[str, Any] = {"name": "interview", "arguments": {"topic": "tea"}}
    first = (await call(peer, request(1, "tools/call", params, capabilities=caps)))["result"]
    (key,) = first["inputRequests"]
    assert first["inputRequests"][key]["method"] == "elicitation/create"
    second = (
        await call(
            peer,
            request(
                2,
                "tools/call",
                {
                    **params,
                    "inputResponses": {key: {"action": "accept", "content": {"name": "Bo"}}},
                    "requestState": first["requestState"],
                },
                capabilities=caps,
            ),
        )
    )["result"]
    (key2,) = second["inputRequests"]
    assert second["inputRequests"][key2]["method"] == "sampling/createMessage"
    assert second["inputRequests"][key2]["params"]["maxTokens"] == 20
    third = (
        await call(
            peer,
            request(
                3,
                "tools/call",
                {
                    **params,
                    "inputResponses": {
                        key2: {"role": "assistant", "content": {"type": "text", "text": "lovely"}, "model": "m"}
                    },
                    "requestState": second["requestState"],
                },
                capabilities=caps,
            ),
        )
    )["result"]
    assert third["content"][0]["text"] == "Bo: lovely"


async def test_tampered_foreign_and_expired_request_state_is_rejected(nursery: trio.Nursery) -> None:
    server = make_server()
    peer = await start(nursery, server)
    caps = {"elicitation": {}}
    first = (await call(peer, request(1, "tools/call", {"name": "greet"}, capabilities=caps)))["result"]
    state = first["requestState"]
    body, tag = state.split(".")
    tampered = body[:-2] + ("AA" if body[-2:] != "AA" else "BB") + "." + tag
    answer = {"user_name": {"action": "accept", "content": {"name": "Eve"}}}
    for bad_state, params in (
        (tampered, {"name": "greet"}),
        (state, {"name": "interview", "arguments": {"topic": "x"}}),  # state bound to another call
        ("not-a-state", {"name": "greet"}),
    ):
        reply = await call(
            peer,
            request(
                2,
                "tools/call",
                {**params, "inputResponses": answer, "requestState": bad_state},
                capabilities={"elicitation": {}, "sampling": {}},
            ),
        )
        assert reply["error"]["code"] == -32602, bad_state
    expiring = make_server(request_state_ttl=-1)
    peer2 = await start(nursery, expiring)
    first = (await call(peer2, request(1, "tools/call", {"name": "greet"}, capabilities=caps)))["result"]
    reply = await call(
        peer2,
        request(
            2,
            "tools/call",
            {"name": "greet", "inputResponses": answer, "requestState": first["requestState"]},
            capabilities=caps,
        ),
    )
    assert reply["error"]["code"] == -32602 and "expired" in reply["error"]["message"]


async def test_missing_client_capability_is_32021(nursery: trio.Nursery) -> None:
    peer = await start(nursery, make_server())
    reply = await call(peer, request(1, "tools/call", {"name": "greet"}))
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


async def test_logging_only_with_a_log_level_and_progress_on_the_request(nursery: trio.Nursery) -> None:
    peer = await start(nursery, make_server())
    await peer.send(request(1, "tools/call", {"name": "chatty", "_meta": {}}))
    reply = await peer.receive()
    assert reply["id"] == 1  # no log message, no progress (no token) before the result
    params = {"name": "chatty"}
    message = request(2, "tools/call", params, **{"io.modelcontextprotocol/logLevel": "info", "progressToken": "p"})
    await peer.send(message)
    seen = [await peer.receive() for _ in range(3)]
    assert [m.get("method") for m in seen] == ["notifications/message", "notifications/progress", None]
    assert seen[0]["params"] == {"level": "info", "data": "working"}
    assert seen[1]["params"]["progressToken"] == "p"


async def test_subscriptions_listen(nursery: trio.Nursery) -> None:
    server = make_server()
    peer = await start(nursery, server)
    await peer.send(
        request(
            9,
            "subscriptions/listen",
            {
                "notifications": {
                    "toolsListChanged": True,
                    "promptsListChanged": True,
                    "resourceSubscriptions": ["test://here"],
                    "unknownFilter": True,
                }
            },
        )
    )
    ack = await peer.receive()
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"] == {SUBSCRIPTION: 9}
    assert ack["params"]["notifications"] == {
        "toolsListChanged": True,
        "promptsListChanged": True,
        "resourceSubscriptions": ["test://here"],
    }
    await trio.testing.wait_all_tasks_blocked()
    server.add_tool(lambda: "x", name="late", description="added late")
    server.notify_resource_updated("test://here")
    server.notify_resource_updated("test://elsewhere")
    changed = await peer.receive()
    updated = await peer.receive()
    assert changed == {
        "jsonrpc": "2.0",
        "method": "notifications/tools/list_changed",
        "params": {"_meta": {SUBSCRIPTION: 9}},
    }
    assert updated["params"] == {"uri": "test://here", "_meta": {SUBSCRIPTION: 9}}
    # A second subscription runs alongside; the client ends the first by cancelling it.
    await peer.send(request(10, "subscriptions/listen", {"notifications": {"resourcesListChanged": True}}))
    assert (await peer.receive())["params"]["_meta"] == {SUBSCRIPTION: 10}
    await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}})
    await trio.testing.wait_all_tasks_blocked()
    server.add_tool(lambda: "y", name="later", description="added later")  # tools: nobody listens now
    server.remove_resource("test://here")
    resources_changed = await peer.receive()
    assert resources_changed["method"] == "notifications/resources/list_changed"
    assert resources_changed["params"]["_meta"] == {SUBSCRIPTION: 10}


async def test_both_eras_on_one_connection(nursery: trio.Nursery) -> None:
    peer = await start(nursery, make_server())
    discover = await call(peer, request(1, "server/discover"))
    assert discover["result"]["resultType"] == "complete"
    legacy = await handshake(peer.send, peer.receive, "2025-11-25", id=2)
    assert legacy["protocolVersion"] == "2025-11-25"
    tools = await call(peer, {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert "resultType" not in tools["result"]  # legacy results carry no modern envelope
    modern = await call(peer, request(4, "tools/list"))
    assert modern["result"]["resultType"] == "complete"


async def test_concurrent_asks_become_one_result_with_several_input_requests(nursery: trio.Nursery) -> None:
    server = Server("multi")

    @server.tool()
    async def everything(ctx: Context) -> str:
        """Ask for three inputs at once."""
        answers: dict[str, str] = {}

        async def name() -> None:
            result = await ctx.elicit("Name?", {"type": "object", "properties": {"n": {"type": "string"}}}, key="name")
            answers["name"] = str((result.content or {}).get("n"))

        async def model() -> None:
            result = await ctx.sample("Hi?", max_tokens=5, key="model")
            answers["model"] = getattr(result.content, "text", "?")

        async def roots() -> None:
            answers["roots"] = ",".join(root.uri for root in await ctx.list_roots(key="roots"))

        async with trio.open_nursery() as inner:
            for ask in (name, model, roots):
                inner.start_soon(ask)
        return f"{answers['name']}/{answers['model']}/{answers['roots']}"

    peer = await start(nursery, server)
    caps = {"elicitation": {}, "sampling": {}, "roots": {}}
    first = (await call(peer, request(1, "tools/call", {"name": "everything"}, capabilities=caps)))["result"]
    assert first["resultType"] == "input_required"
    assert {key: value["method"] for key, value in first["inputRequests"].items()} == {
        "name": "elicitation/create",
        "model": "sampling/createMessage",
        "roots": "roots/list",
    }
    responses = {
        "name": {"action": "accept", "content": {"n": "Ada"}},
        "model": {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"},
        "roots": {"roots": [{"uri": "file:///a"}]},
    }
    second = await call(
        peer,
        request(
            2,
            "tools/call",
            {"name": "everything", "inputResponses": responses, "requestState": first["requestState"]},
            capabilities=caps,
        ),
    )
    assert second["result"]["content"][0]["text"] == "Ada/hello/file:///a"


async def test_a_refusal_beside_concurrent_asks_is_one_protocol_error(nursery: trio.Nursery) -> None:
    server = Server("mixed")

    @server.tool()
    async def both(ctx: Context) -> str:
        """Ask for elicitation (declared) and sampling (not declared) at once."""
        async with trio.open_nursery() as inner:
            inner.start_soon(lambda: ctx.elicit("Name?", {"type": "object"}, key="a"))
            inner.start_soon(lambda: ctx.sample("Hi", max_tokens=5, key="b"))
        return "unreachable"

    @server.tool()
    async def neither(ctx: Context) -> str:
        """Two refusals at once."""
        async with trio.open_nursery() as inner:
            inner.start_soon(lambda: ctx.elicit("Name?", {"type": "object"}, key="a"))
            inner.start_soon(lambda: ctx.sample("Hi", max_tokens=5, key="b"))
        return "unreachable"

    peer = await start(nursery, server)
    mixed = await call(peer, request(1, "tools/call", {"name": "both"}, capabilities={"elicitation": {}}))
    assert mixed["error"]["code"] == -32021
    assert mixed["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    refused = await call(peer, request(2, "tools/call", {"name": "neither"}))
    assert refused["error"]["code"] == -32021
    assert (await call(peer, request(3, "tools/list")))["result"]["resultType"] == "complete"  # still serving


@pytest.mark.parametrize("answer", [42, {"action": 7}, {"unrelated": True}])
async def test_malformed_input_responses_are_invalid_params(nursery: trio.Nursery, answer: Any) -> None:
    peer = await start(nursery, make_server())
    caps = {"elicitation": {}}
    first = (await call(peer, request(1, "tools/call", {"name": "greet"}, capabilities=caps)))["result"]
    retry = {"name": "greet", "inputResponses": {"user_name": answer}, "requestState": first["requestState"]}
    reply = await call(peer, request(2, "tools/call", retry, capabilities=caps))
    assert reply["error"]["code"] == -32602


async def test_request_state_is_bound_to_the_principal(nursery: trio.Nursery) -> None:
    server = make_server()
    alice, bob = memory_stream_pair(), memory_stream_pair()
    await nursery.start(ServerConnection(server, alice[0], principal="alice").serve)
    await nursery.start(ServerConnection(server, bob[0], principal="bob").serve)
    caps = {"elicitation": {}}
    first = (await call(alice[1], request(1, "tools/call", {"name": "greet"}, capabilities=caps)))["result"]
    retry = {
        "name": "greet",
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Eve"}}},
        "requestState": first["requestState"],
    }
    stolen = await call(bob[1], request(2, "tools/call", retry, capabilities=caps))
    assert stolen["error"]["code"] == -32602
    mine = await call(alice[1], request(3, "tools/call", retry, capabilities=caps))
    assert mine["result"]["content"][0]["text"] == "Hello, Eve!"
