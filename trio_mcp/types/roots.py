"""Roots: the directories or files a client exposes to servers (``roots/list``).

A JSON-RPC request up to 2025-11-25; from 2026-07-28 only an embedded input request, and deprecated.
"""

import attrs

from ._base import Meta, Result, WireType

__all__ = ["Root", "ListRootsResult"]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Root(WireType):
    """A root the server may operate on; ``uri`` is a ``file://`` URI."""

    uri: str
    name: str | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ListRootsResult(Result):
    """The client's answer to ``roots/list``."""

    roots: list[Root]
