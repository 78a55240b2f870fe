"""Property test of the client against a hostile server, over the in-memory transport: whatever the server sends
after the handshake (garbage, requests with random params, stray responses, random notifications), the client's
session keeps working: it answers the server's ping and its own ping is answered."""

from __future__ import annotations

import json
from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp import Client, ConnectionClosed
from trio_mcp._wire.methods import METHODS
from trio_mcp.transports import memory_stream_pair
from trio_mcp.types import Root

from transport_helpers import initialize_result  # isort: skip

_PROFILE = settings.get_profile("trio_mcp_fuzz")
FUZZ = settings(_PROFILE, max_examples=max(20, _PROFILE.max_examples // 2))
VERSION = "2025-11-25"

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
ids = st.one_of(st.integers(min_value=-2, max_value=6), st.sampled_from(["x", ""]), st.booleans(), st.none())
params = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(
            [
                "progressToken",
                "progress",
                "requestId",
                "level",
                "data",
                "uri",
                "messages",
                "maxTokens",
                "message",
                "requestedSchema",
                "mode",
                "url",
            ]
        ),
        json_values,
        max_size=4,
    ),
    json_values,
)


def message(id: Any, method: str, p: Any, kind: str) -> Any:
    out: dict[str, Any] = {"jsonrpc": "2.0"}
    if kind in ("result", "error") and type(id) is int and id > 0:
        # The client numbers its requests 1, 2, ...: a stray answer carrying the id of a call the client has yet
        # to make would be taken for its answer, by any JSON-RPC peer. Stray answers use ids it never does.
        id = -id
    if kind == "request":
        out.update(id=id, method=method)
    elif kind == "notification":
        out.update(method=method)
    elif kind == "result":
        out.update(id=id, result=p)
    else:
        out.update(id=id, error=p)
    if kind in ("request", "notification") and p is not None:
        out["params"] = p
    return out


hostile = st.one_of(
    st.builds(
        message,
        ids,
        st.sampled_from(sorted(METHODS) + ["nope"]),
        params,
        st.sampled_from(["request", "notification", "result", "error"]),
    ),
    st.binary(max_size=30),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.lists(json_values, max_size=3),
)


async def list_roots() -> list[Root]:
    return [Root(uri="file:///tmp")]


async def exercise(sequence: list[Any]) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            client_end, server = memory_stream_pair()
            probe_answered = trio.Event()

            async def fake_server() -> None:
                while True:
                    try:
                        incoming = await server.receive()
                    except ConnectionClosed:  # the client closed at the end of the example
                        return
                    if not isinstance(incoming, dict):
                        continue
                    if incoming.get("method") == "initialize":
                        await server.send(
                            {
                                "jsonrpc": "2.0",
                                "id": incoming["id"],
                                "result": initialize_result(
                                    VERSION, capabilities={"tools": {}, "logging": {}}, server="hostile"
                                ),
                            }
                        )
                    elif incoming.get("method") == "ping":
                        await server.send({"jsonrpc": "2.0", "id": incoming["id"], "result": {}})
                    elif incoming.get("id") == "server-probe" and "result" in incoming:
                        probe_answered.set()

            nursery.start_soon(fake_server)
            client = Client(
                client_end,
                protocol_version=VERSION,
                roots=list_roots,
                request_timeout=10,
            )
            await client.start(nursery)
            for item in sequence:
                if isinstance(item, bytes):
                    await server.send_raw(item)
                else:
                    await server.send(item)
            await server.send({"jsonrpc": "2.0", "id": "server-probe", "method": "ping"})
            await client.ping()
            await probe_answered.wait()
            await client.aclose()
            nursery.cancel_scope.cancel()


@FUZZ
@given(sequence=st.lists(hostile, max_size=12))
def test_a_hostile_server_never_breaks_the_client_session(sequence: list[Any]) -> None:
    trio.run(exercise, sequence)
