"""Property test of the server session engine over the in-memory transport: any sequence of messages (garbage
bytes, near-valid JSON-RPC, real methods with random params, cancels of live and dead ids, batches) leaves the
session serving; a liveness probe sent afterwards is still answered, and the server never dies of an exception."""

from __future__ import annotations

import json
from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp import Context, Server
from trio_mcp._wire.methods import METHODS
from trio_mcp._wire.versions import LEGACY_VERSIONS, V2026_07_28
from trio_mcp.transports import memory_stream_pair

from transport_helpers import INITIALIZED, initialize_request  # isort: skip

FUZZ = settings(
    settings.get_profile("trio_mcp_fuzz"), max_examples=max(20, settings.get_profile("trio_mcp_fuzz").max_examples // 2)
)


def make_server() -> Server:
    server = Server("fuzz-target", version="1.0.0")

    @server.tool()
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool()
    async def nap(seconds: float, ctx: Context) -> str:
        """Sleep a little (so cancels find something in flight), reporting progress."""
        await ctx.report_progress(1, total=2)
        await trio.sleep(min(abs(seconds), 0.05))
        return "rested"

    @server.tool()
    def fail(why: str) -> str:
        """Raise an ordinary exception."""
        raise RuntimeError(why)

    @server.resource("fuzz://item/{name}")
    def item(name: str) -> str:
        """A templated resource."""
        return name

    @server.prompt()
    def hello(name: str) -> str:
        """A prompt."""
        return f"hello {name}"

    return server


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8,
)
ids = st.one_of(st.integers(min_value=-3, max_value=20), st.sampled_from(["a", "b", ""]), st.booleans(), st.none())
methods = st.sampled_from(sorted(METHODS) + ["nope/nope", ""])
tool_calls = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["echo", "nap", "fail", "missing"]),
        "arguments": st.one_of(
            st.fixed_dictionaries({"text": json_values}),
            st.fixed_dictionaries({"seconds": json_values}),
            st.fixed_dictionaries({"why": st.text(max_size=5)}),
            json_values,
        ),
    },
    optional={"_meta": st.fixed_dictionaries({}, optional={"progressToken": ids})},
)
params = st.one_of(
    st.none(),
    tool_calls,
    st.fixed_dictionaries({"uri": st.sampled_from(["fuzz://item/x", "fuzz://nope", ""]), "name": st.text(max_size=4)}),
    st.dictionaries(st.text(max_size=6), json_values, max_size=3),
    json_values,
)


def requests(stateless: bool) -> st.SearchStrategy[Any]:
    def build(id: Any, method: str, p: Any, with_id: bool) -> dict[str, Any]:
        if stateless and isinstance(p, dict):
            p = {**p, "_meta": envelope()}
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if p is not None:
            message["params"] = p
        if with_id:
            message["id"] = id
        return message

    return st.builds(build, ids, methods, params, st.booleans())


cancels = st.builds(
    lambda id, reason: {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": reason},
    },
    ids,
    json_values,
)
garbage = st.one_of(
    st.binary(max_size=40),
    st.sampled_from(
        [b"", b"{", b"[]", b"[{}]", b"null", b'"x"', b"1e999", b'{"jsonrpc":"2.0","id":1e999,"method":"ping"}']
    ),
    json_values.map(lambda v: json.dumps(v).encode()),
)


def messages(stateless: bool) -> st.SearchStrategy[Any]:
    single = st.one_of(
        requests(stateless),
        cancels,
        garbage,
        st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "result", "error", "params"]), json_values),
    )
    return st.one_of(single, st.lists(st.one_of(requests(stateless), cancels, json_values), max_size=4))


def envelope() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": V2026_07_28,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
    }


async def exercise(version: str, sequence: list[Any]) -> None:
    stateless = version == V2026_07_28
    probe_id = "liveness-probe"
    answered = trio.Event()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            client, server_end = memory_stream_pair()
            await nursery.start(
                lambda task_status: make_server().serve_connection(
                    server_end, modern_only=stateless, task_status=task_status
                )
            )

            async def read_all() -> None:
                while True:
                    message = await client.receive()
                    for item in message if isinstance(message, list) else [message]:
                        if isinstance(item, dict) and item.get("id") == probe_id:
                            assert item.get("result") is not None, item
                            answered.set()

            nursery.start_soon(read_all)
            if not stateless:
                await client.send(initialize_request(version, id="init", client="fuzz"))
                await client.send(INITIALIZED)
            for message in sequence:
                if isinstance(message, bytes):
                    await client.send_raw(message)
                else:
                    await client.send(message)
            if stateless:
                await client.send(
                    {"jsonrpc": "2.0", "id": probe_id, "method": "server/discover", "params": {"_meta": envelope()}}
                )
            else:
                await client.send({"jsonrpc": "2.0", "id": probe_id, "method": "ping"})
            await answered.wait()
            nursery.cancel_scope.cancel()


@FUZZ
@given(data=st.data(), version=st.sampled_from([*LEGACY_VERSIONS, V2026_07_28]))
def test_no_message_sequence_kills_the_session(data: st.DataObject, version: str) -> None:
    sequence = data.draw(st.lists(messages(version == V2026_07_28), max_size=12), label="sequence")
    trio.run(exercise, version, sequence)
