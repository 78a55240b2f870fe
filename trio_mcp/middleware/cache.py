"""A response cache for listings and resource reads, dropped when the server says they changed.

A cached answer lives ``ttl`` seconds at most, and less when the server announces a change: a list change
drops that kind's listings (a resources change drops reads too), a resource update drops that resource's
reads. Changes announced in another process reach this one through ``trio_mcp.scale.RedisFanout``, which
announces them here: so the cache of every worker stays right.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

import trio

from .._middleware import CallNext, RequestInfo
from ._caller import caller_key

if TYPE_CHECKING:
    from ..server import Server

__all__ = ["ResponseCache", "CACHEABLE"]

#: The methods whose answers may be cached: they read, and the server announces when what they read changes.
CACHEABLE = frozenset({"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"})


class ResponseCache:
    """Middleware answering listings and ``resources/read`` from memory for up to ``ttl`` seconds.

    Pass the server whose changes invalidate it, then add it: ``server.middleware(ResponseCache(server))``.
    ``methods``: which of ``CACHEABLE`` to cache (all by default). ``per_principal``: keep each caller's
    answers apart (the default: what a server lists or reads may depend on who asks). At most ``max_entries``
    answers are kept, the oldest dropped first. Errors and answers asking for input are never cached.
    """

    def __init__(
        self,
        server: Server,
        *,
        ttl: float = 60.0,
        methods: Collection[str] = CACHEABLE,
        per_principal: bool = True,
        max_entries: int = 1024,
    ) -> None:
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
            raise ValueError(f"ttl must be a number of seconds above 0, not {ttl!r}")
        unknown = set(methods) - CACHEABLE
        if isinstance(methods, str) or unknown:
            raise ValueError(f"methods must be among {', '.join(sorted(CACHEABLE))}; not {methods!r}")
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries must be a whole number, 1 or more, not {max_entries!r}")
        self.ttl = float(ttl)
        self.methods = frozenset(methods)
        self.per_principal = per_principal
        self.max_entries = max_entries
        #: key -> (expiry, result, method, uri); insertion order is age order
        self._entries: dict[str, tuple[float, dict[str, Any], str, str | None]] = {}
        server.watch(self)

    async def __call__(self, call: RequestInfo, call_next: CallNext) -> Any:
        if call.method not in self.methods or call.is_notification:
            return await call_next()
        params = {name: value for name, value in (call.params or {}).items() if name != "_meta"}
        who = caller_key(call.principal) if self.per_principal else ""
        key = json.dumps([call.method, call.protocol_version, who, params], sort_keys=True, default=repr)
        now = trio.current_time()
        entry = self._entries.get(key)
        if entry is not None and entry[0] > now:
            return dict(entry[1])
        result = await call_next()
        if type(result) is dict and result.get("resultType", "complete") == "complete":
            uri = params.get("uri") if call.method == "resources/read" else None
            self._entries.pop(key, None)
            if len(self._entries) >= self.max_entries:
                del self._entries[next(iter(self._entries))]
            self._entries[key] = (now + self.ttl, dict(result), call.method, uri if isinstance(uri, str) else None)
        return result

    # -- the server's announcements (a Listener) ----------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """The ``kind`` list changed: drop its listings (and every read, for resources)."""
        prefix = f"{kind}/"
        self._drop(lambda method, uri: method.startswith(prefix))

    def resource_updated(self, uri: str) -> None:
        """``uri`` changed: drop its reads."""
        self._drop(lambda method, read: read == uri)

    def clear(self) -> None:
        """Drop every cached answer."""
        self._entries.clear()

    def _drop(self, stale: Callable[[str, str | None], bool]) -> None:
        self._entries = {key: entry for key, entry in self._entries.items() if not stale(entry[2], entry[3])}
