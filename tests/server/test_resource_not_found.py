"""A resource template says "nothing here" with ``ResourceNotFound``: the client gets the protocol's
resource-not-found error of its revision, exactly as for a URI no resource matches, over HTTP in both eras."""

from __future__ import annotations

import pytest
import trio

import trio_mcp
from trio_mcp import ResourceNotFound, Server
from trio_mcp.errors import INTERNAL_ERROR, INVALID_PARAMS, RESOURCE_NOT_FOUND, McpError

server = Server("users")
USERS = {"42": "Ada"}


@server.resource("users://{user_id}/name")
async def user_name(user_id: str) -> str:
    if user_id not in USERS:
        raise ResourceNotFound(f"users://{user_id}/name")
    return USERS[user_id]


@server.resource("broken://{key}")
def broken(key: str) -> str:
    raise LookupError(key)


@pytest.mark.parametrize(("version", "code"), [("2025-11-25", RESOURCE_NOT_FOUND), ("2026-07-28", INVALID_PARAMS)])
async def test_a_template_raising_resource_not_found_is_the_revisions_not_found(
    nursery: trio.Nursery, version: str, code: int
) -> None:
    port = await nursery.start(server.serve_http, "127.0.0.1", 0)
    with trio.fail_after(10):
        async with trio_mcp.open_http_client(f"http://127.0.0.1:{port}/mcp", protocol_version=version) as client:
            assert (await client.read_resource("users://42/name")).contents[0].text == "Ada"  # type: ignore[union-attr]
            with pytest.raises(McpError) as missing:
                await client.read_resource("users://7/name")
            assert (missing.value.code, missing.value.message) == (code, "Resource not found: users://7/name")
            assert missing.value.data == {"uri": "users://7/name"}
            with pytest.raises(McpError) as unmatched:
                await client.read_resource("nothing://at/all")
            assert unmatched.value.code == code
            with pytest.raises(McpError) as failed:
                await client.read_resource("broken://x")
            assert failed.value.code == INTERNAL_ERROR
