"""The auto-pager behind ``Client.iter_tools()`` and friends.

A class with ``__anext__`` rather than an async generator: nothing here holds a cancel scope or nursery across a
``yield``, and an abandoned iterator needs no finalizer. It guards against servers that loop: a cursor the
server already gave (the same one twice, or an older one again) and more than ``max_pages`` pages both raise
``RemoteProtocolError`` naming the method, instead of paging forever (DeusData/codebase-memory-mcp#1247).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from ..errors import RemoteProtocolError

__all__ = ["ItemPages", "DEFAULT_MAX_PAGES"]

T = TypeVar("T")

#: How many pages an iterator fetches before deciding the server is looping.
DEFAULT_MAX_PAGES = 1000

FetchPage = Callable[[str | None], Awaitable[tuple[Sequence[T], str | None]]]


class ItemPages(Generic[T]):
    """Every item of a paginated ``*/list`` method, fetching the next page only when the last one is used up.

    An empty-string ``nextCursor`` counts as the end, as most SDKs read it.
    """

    def __init__(self, method: str, fetch: FetchPage[T], *, max_pages: int = DEFAULT_MAX_PAGES) -> None:
        if max_pages < 1:
            raise ValueError("max_pages must be at least 1")
        self.method = method
        self._fetch = fetch
        self._max_pages = max_pages
        self._buffer: deque[T] = deque()
        self._cursor: str | None = None
        self._seen: set[str] = set()
        self._done = False
        #: Pages fetched so far.
        self.pages = 0

    def __aiter__(self) -> ItemPages[T]:
        """The iterator itself (it can be iterated once)."""
        return self

    async def __anext__(self) -> T:
        """The next item, fetching the next page when the current one is used up."""
        while not self._buffer:
            if self._done:
                raise StopAsyncIteration
            await self._next_page()
        return self._buffer.popleft()

    async def _next_page(self) -> None:
        if self.pages >= self._max_pages:
            self._done = True
            raise RemoteProtocolError(
                f"{self.method}: the server still had more after {self._max_pages} pages; giving up "
                "(raise max_pages if that many are expected)"
            )
        items, cursor = await self._fetch(self._cursor)
        self.pages += 1
        self._buffer.extend(items)
        if not cursor:
            self._done = True
            return
        if cursor in self._seen:
            self._done = True
            raise RemoteProtocolError(
                f"{self.method}: the server sent cursor {cursor[:80]!r} a second time; stopping instead of looping"
            )
        self._seen.add(cursor)
        self._cursor = cursor
