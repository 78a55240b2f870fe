"""A client process for the fault suite: connects to the fault server (stdio, or the HTTP URL given), prints the
server's pid, then makes a long call, so that a test can kill this process mid-call."""

from __future__ import annotations

import sys
from pathlib import Path

import trio

import trio_mcp

SERVER = [sys.executable, str(Path(__file__).parent.parent / "servers" / "fault_server.py")]


async def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else None
    if url is None:
        context = trio_mcp.open_stdio_client(SERVER, stderr="capture")
    else:
        context = trio_mcp.open_http_client(url, protocol_version=sys.argv[2])
    async with context as client:
        result = await client.call_tool("pid")
        print(result.structured_content["result"], flush=True)  # type: ignore[index]
        await client.call_tool("nap", {"seconds": 60})


if __name__ == "__main__":
    trio.run(main)
