"""``subscriptions/listen`` (2026-07-28): a change made while the acknowledgement is being written is told right
after it, never lost and never before it.

The client acts on the acknowledgement as soon as it reads it; the server's write of the acknowledgement may
return only after that action was served (a busy transport, a scheduler that runs the reader first). Here the
server's side of a real socket holds that write until then, every time, so the test does not depend on timing.
"""

from __future__ import annotations

from typing import Any

import trio

import trio_mcp
from trio_mcp import Server
from trio_mcp._core.jsonrpc import RequestId
from trio_mcp.client import ChangeNotification
from trio_mcp.transports import MessageStream
from trio_mcp.transports.stdio import StdioMessageStream

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
TOOLS_CHANGED = "notifications/tools/list_changed"
UPDATED = "notifications/resources/updated"
SENTINEL = "note://sentinel"


class AcknowledgingSlowly:
    """The server's stream: writing a listen acknowledgement returns only once ``changed`` is set (the line is
    on the socket before that, so the client reads it and acts meanwhile)."""

    def __init__(self, stream: MessageStream) -> None:
        self._stream = stream
        self.changed = trio.Event()

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        await self._stream.send(message, related_request_id=related_request_id, final=final)
        if type(message) is dict and message.get("method") == ACKNOWLEDGED:
            await self.changed.wait()

    async def receive(self) -> Any:
        return await self._stream.receive()

    async def aclose(self) -> None:
        await self._stream.aclose()


class Recording:
    """The client's stream, noting the method of each notification it receives, in order."""

    def __init__(self, stream: MessageStream) -> None:
        self._stream = stream
        self.methods: list[str] = []

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        await self._stream.send(message, related_request_id=related_request_id, final=final)

    async def receive(self) -> Any:
        message = await self._stream.receive()
        if type(message) is dict and "method" in message:
            self.methods.append(message["method"])
        return message

    async def aclose(self) -> None:
        await self._stream.aclose()


def make_server(server_stream: AcknowledgingSlowly) -> Server:
    server = Server("changing")

    @server.tool()
    async def add() -> str:
        """Add a tool: the tool list changes."""
        server.add_tool(lambda: "new", name="added", description="added while the listen was acknowledged")
        server_stream.changed.set()
        return "added"

    @server.tool()
    async def touch() -> str:
        """Say the sentinel resource changed."""
        server.notify_resource_updated(SENTINEL)
        return "touched"

    @server.resource(SENTINEL)
    def sentinel() -> str:
        return "sentinel"

    return server


async def test_a_change_made_as_the_acknowledgement_is_read_is_told_after_it() -> None:
    """The client reads the acknowledgement and at once adds a tool, while the server is still writing the
    acknowledgement; then it touches a resource. It is told of the tool list change, after the acknowledgement
    and before the resource's update (a listener registered only once the write returned missed it)."""
    server_socket, client_socket = trio.socket.socketpair()
    server_end, client_end = trio.SocketStream(server_socket), trio.SocketStream(client_socket)
    server_stream = AcknowledgingSlowly(StdioMessageStream(server_end, server_end))
    client_stream = Recording(StdioMessageStream(client_end, client_end))
    server = make_server(server_stream)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.serve_connection, server_stream)
            async with trio_mcp.open_client(client_stream, protocol_version="2026-07-28") as client:
                async with client.listen(tools=True, resource_uris=[SENTINEL]) as changes:
                    assert (await client.call_tool("add")).content[0].text == "added"
                    assert (await client.call_tool("touch")).content[0].text == "touched"
                    assert await changes.receive() == ChangeNotification("tools")
                    assert await changes.receive() == ChangeNotification("resource", SENTINEL)
            nursery.cancel_scope.cancel()
    told = [method for method in client_stream.methods if method in (ACKNOWLEDGED, TOOLS_CHANGED, UPDATED)]
    assert told == [ACKNOWLEDGED, TOOLS_CHANGED, UPDATED]
