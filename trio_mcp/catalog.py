"""A tool-search tool for servers with hundreds of tools: the model asks for what it needs by words.

``add_tool_search(server)`` adds one tool, ``search_tools``, that ranks the server's tools (its own, mounted and
proxied ones alike, as they are at the time of the call) by how well their name and description match a query,
and answers a page at a time with each match's name, description and input schema, so the model can call it
next. ``tools/list`` is unchanged: a client that wants the full list still gets it.
"""

from __future__ import annotations

import re
from typing import Any, TypedDict

from ._wire.versions import LATEST_VERSION
from .errors import ToolError
from .server import Server
from .types import ToolAnnotations

__all__ = ["add_tool_search", "ToolMatch", "ToolSearchPage"]

_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


class ToolMatch(TypedDict):
    """One tool found: what the model needs to call it."""

    name: str
    description: str
    inputSchema: dict[str, Any]


class ToolSearchPage(TypedDict):
    """A page of matches, best first; ``nextCursor`` (empty on the last page) asks for the next one."""

    tools: list[ToolMatch]
    total: int
    nextCursor: str


def _words(text: str) -> list[str]:
    """Lower-case words, ``snake_case`` and ``camelCase`` split: ``getUserById`` is get, user, by, id."""
    return [word.lower() for word in _WORD.findall(text)]


def _score(query: list[str], name: str, description: str) -> int:
    """Three for each query word that is a word of the name, two for one within the name, one for one in the
    description."""
    name_words, text = set(_words(name)), name.lower()
    described = set(_words(description))
    return sum(3 if word in name_words else 2 if word in text else 1 if word in described else 0 for word in query)


def add_tool_search(server: Server, *, name: str = "search_tools", page_size: int = 10) -> None:
    """Add the tool ``name`` to ``server``: ``search_tools(query, cursor="")`` answers a ``ToolSearchPage``.

    Tools are ranked by ``query``'s words in their names and descriptions (ties in registration order); an
    empty query lists every tool. ``page_size`` matches per page.
    """
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"page_size must be a whole number, 1 or more, not {page_size!r}")

    async def search_tools(query: str, cursor: str = "") -> ToolSearchPage:
        """Find the tools of this server that fit a task: give a few words (what to do, on what), get the
        best-matching tools with their input schemas, a page at a time (pass nextCursor back for more)."""
        if cursor and not cursor.isdigit():
            raise ToolError(f"cursor must be a nextCursor this tool returned, not {cursor!r}")
        start = int(cursor or 0)
        words = _words(query)
        ranked = []
        for position, tool in enumerate(server.tools.values()):
            if tool.name == name:
                continue
            score = _score(words, tool.name, tool.description or "") if words else 1
            if score:
                ranked.append((-score, position, tool))
        ranked.sort(key=lambda entry: entry[:2])
        shown = [tool.wire(LATEST_VERSION) for _, _, tool in ranked[start : start + page_size]]
        page = [
            ToolMatch(name=tool["name"], description=tool.get("description", ""), inputSchema=tool["inputSchema"])
            for tool in shown
        ]
        more = start + page_size < len(ranked)
        return ToolSearchPage(tools=page, total=len(ranked), nextCursor=str(start + page_size) if more else "")

    server.add_tool(search_tools, name=name, annotations=ToolAnnotations(read_only_hint=True))
