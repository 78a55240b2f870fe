"""Every method on every revision, over a WebSocket on 127.0.0.1: what a server answers, and what a client
refuses before sending, checked against what each revision's schema says (``tests/schema_facts.py``).

Two servers: one with nothing registered (every capability but logging missing) and one with a tool that can
run as a task, a prompt, a resource and a completion handler.
"""

from __future__ import annotations

from typing import Any

import pytest
import schema_facts as facts
import trio
from transport_helpers import connect

import trio_mcp
from trio_mcp.errors import METHOD_NOT_FOUND
from trio_mcp.types import CreateMessageResult, ElicitResult, Root, TextContent

#: Params that make each method a valid request (where a method needs any).
PARAMS: dict[str, dict[str, Any]] = {
    "tools/call": {"name": "echo", "arguments": {"text": "hi"}},
    "prompts/get": {"name": "greet"},
    "resources/read": {"uri": "test://motd"},
    "resources/subscribe": {"uri": "test://motd"},
    "resources/unsubscribe": {"uri": "test://motd"},
    "completion/complete": {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "a", "value": ""}},
    "logging/setLevel": {"level": "info"},
    "tasks/get": {"taskId": "unknown"},
    "tasks/result": {"taskId": "unknown"},
    "tasks/cancel": {"taskId": "unknown"},
    "tasks/update": {"taskId": "unknown", "inputResponses": {}},
    "initialize": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
#: Held open until the client leaves: asked through ``Client.listen`` instead.
LONG_LIVED = {"subscriptions/listen"}
METHODS = sorted(facts.every_method() - LONG_LIVED | {"nope/nope"})


def make_server(full: bool) -> trio_mcp.Server:
    server = trio_mcp.Server("full" if full else "empty")
    if full:

        @server.tool(task_support="optional")
        async def echo(text: str) -> str:
            return text

        @server.prompt()
        async def greet() -> str:
            return "hello"

        @server.resource("test://motd")
        async def motd() -> str:
            return "message of the day"

        @server.completion()
        async def complete(ref: Any, argument: Any, context: Any) -> list[str]:
            return []

    return server


def exists_as_client_request(method: str, revision: str) -> bool:
    extension = revision == "2026-07-28" and method in facts.TASKS_EXTENSION_REQUESTS
    return method in facts.CLIENT_REQUESTS[revision] or extension


def offered(method: str, revision: str, full: bool) -> bool:
    """Whether the server serves ``method``: it offers what the method needs (logging is always offered)."""
    needed = facts.REQUIRED_CAPABILITY.get(method)
    extension = revision == "2026-07-28" and method in facts.TASKS_EXTENSION_REQUESTS
    return needed is None or needed[0] == "logging" or extension or full


def envelope(revision: str) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": revision, "io.modelcontextprotocol/clientCapabilities": {}}
    return {"_meta": meta} if revision == "2026-07-28" else {}


@pytest.mark.parametrize("full", [False, True], ids=["empty", "full"])
@pytest.mark.parametrize("revision", facts.REVISIONS)
async def test_what_the_server_answers(revision: str, full: bool) -> None:
    async with connect(make_server(full), "websocket", protocol_version=revision) as client:
        for method in METHODS:
            if method == "initialize" and revision != "2026-07-28":
                continue  # the handshake itself sent it
            try:
                with trio.fail_after(10):
                    await client.session.request(method, {**PARAMS.get(method, {}), **envelope(revision)})
            except trio_mcp.McpError as exc:
                code, message = exc.code, exc.message
            else:
                code, message = 0, "answered"
            if not exists_as_client_request(method, revision):
                assert code == METHOD_NOT_FOUND, (method, message)
            elif not offered(method, revision, full):
                assert code == METHOD_NOT_FOUND and "does not offer" in message, (method, message)
            else:
                assert code != METHOD_NOT_FOUND, (method, message)


def refused(method: str, revision: str, full: bool) -> bool:
    """Whether a client refuses to send ``method`` to the server: the revision lacks it as a client request,
    or the revision has the capability it needs and the server did not declare it."""
    if method == "nope/nope":
        return False  # not an MCP method: an extension's, sent as it is
    if not exists_as_client_request(method, revision):
        return True
    needed = facts.REQUIRED_CAPABILITY.get(method)
    extension = revision == "2026-07-28" and method in facts.TASKS_EXTENSION_REQUESTS
    if needed is None or extension or needed[0] not in facts.SERVER_CAPABILITIES[revision]:
        return False
    return needed[0] != "logging" and not full


@pytest.mark.parametrize("full", [False, True], ids=["empty", "full"])
@pytest.mark.parametrize("revision", facts.REVISIONS)
async def test_what_the_client_refuses(revision: str, full: bool) -> None:
    async with connect(make_server(full), "websocket", protocol_version=revision) as client:
        for method in METHODS:
            try:
                with trio.fail_after(10):
                    await client.request(method, PARAMS.get(method))
            except trio_mcp.CapabilityError as exc:
                assert exc.method == method
                assert refused(method, revision, full), (method, str(exc))
            except trio_mcp.McpError as exc:  # sent, and answered with an error
                assert not refused(method, revision, full), (method, exc.message)
            else:
                assert not refused(method, revision, full), method
        if revision == "2026-07-28":
            async with client.listen(tools=True) as subscription:
                assert subscription.honoured is not None


async def answer_roots() -> list[Root]:
    return [Root(uri="file:///tmp")]


async def answer_sampling(params: Any) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="ok"), model="m")


async def answer_elicitation(params: Any) -> ElicitResult:
    return ElicitResult(action="decline")


def asking_server() -> trio_mcp.Server:
    server = trio_mcp.Server("asking")

    @server.tool()
    async def ask(method: str, ctx: trio_mcp.Context) -> str:
        if method == "roots/list":
            await ctx.list_roots()
        elif method == "sampling/createMessage":
            await ctx.sample("hi", max_tokens=5)
        else:
            await ctx.elicit("name?", {"type": "object", "properties": {}})
        return "answered"

    return server


@pytest.mark.parametrize("declares", [False, True], ids=["no-callbacks", "callbacks"])
@pytest.mark.parametrize("revision", facts.REVISIONS)
async def test_what_a_server_asks_a_client(revision: str, declares: bool) -> None:
    """A server asks a client only what the revision lets it ask (as a request, or embedded in an input
    request on 2026-07-28) and the client declared; else the tool's call fails naming the capability."""
    callbacks: dict[str, Any] = (
        {"roots": answer_roots, "sampling": answer_sampling, "elicitation": answer_elicitation} if declares else {}
    )
    async with connect(asking_server(), "websocket", protocol_version=revision, **callbacks) as client:
        for method in ("roots/list", "sampling/createMessage", "elicitation/create"):
            askable = method in facts.SERVER_REQUESTS[revision] | facts.EMBEDDED_REQUESTS[revision]
            capability = facts.REQUIRED_CAPABILITY[method][0]
            with trio.fail_after(10):
                if askable and declares:
                    result = await client.call_tool("ask", {"method": method})
                    assert not result.is_error and result.content[0].text == "answered", method
                    continue
                with pytest.raises(trio_mcp.McpError) as caught:
                    await client.call_tool("ask", {"method": method})
            assert f"did not declare the {capability} capability" in caught.value.message, method
