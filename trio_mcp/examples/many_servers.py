"""One client driving several servers with ``ClientGroup``: tools namespaced as ``server.tool``, one lifetime.

Two servers are started as subprocesses (the bookshop example, and this file's own `notes` server); the group
lists every tool under its server's name, routes calls, and shuts every server down when the block ends. A server
that dies takes only its own client with it.

Run it: ``python -m trio_mcp.examples.many_servers``.
"""

from __future__ import annotations

import sys

import trio

import trio_mcp
from trio_mcp import Server

notes = Server("notes", version="1.0.0")
_saved: list[str] = []


@notes.tool()
async def add_note(text: str) -> int:
    """Save a note; returns how many there are."""
    _saved.append(text)
    return len(_saved)


async def main() -> None:
    async with trio_mcp.ClientGroup() as group:
        await group.connect_stdio("books", [sys.executable, "-m", "trio_mcp.examples.bookshop"])
        await group.connect_stdio("notes", [sys.executable, "-m", "trio_mcp.examples.many_servers", "serve"])
        for tool in await group.list_tools():
            print(f"{tool.name}: {tool.description}")
        found = await group.call_tool("books.search_books", {"query": "dune", "limit": 2})
        print(f"books.search_books -> {found.structured_content}")
        for title in (found.structured_content or {}).get("result", []):
            count = await group.call_tool("notes.add_note", {"text": f"read {title}"})
            print(f"notes.add_note -> {count.structured_content}")
    print("both servers shut down")


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        trio.run(notes.serve_stdio)
    else:
        trio.run(main)
