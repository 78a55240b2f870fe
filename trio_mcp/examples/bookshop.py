"""A small MCP server: ``python -m trio_mcp.examples.bookshop`` serves it on stdio."""

from __future__ import annotations

from typing import Annotated

import trio

from trio_mcp import Context, Field, Server

server = Server("bookshop", version="1.0.0", instructions="Search the catalogue before recommending a book.")

CATALOGUE = ["Dune", "Dune Messiah", "Children of Dune", "The Left Hand of Darkness", "Solaris"]


@server.tool()
async def search_books(
    query: Annotated[str, Field(description="Words to look for in titles")],
    limit: int = 3,
    *,
    ctx: Context,
) -> list[str]:
    """Search the catalogue by title."""
    found = [title for title in CATALOGUE if query.lower() in title.lower()][:limit]
    for done in range(1, len(found) + 1):
        await trio.sleep(0.01)  # a peer cancel raises trio.Cancelled here
        await ctx.report_progress(done, total=len(found))
    return found


@server.tool()
def word_count(text: str) -> int:
    """Count the words in a text (a sync tool: it runs in a worker thread)."""
    return len(text.split())


@server.tool()
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


if __name__ == "__main__":
    trio.run(server.serve_stdio)
