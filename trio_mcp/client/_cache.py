"""The 2026-07-28 result cache: list and read results are reused for the ``ttlMs`` the server allows.

The key is the method plus the params that shape the result (the cursor, the URI), never the ``_meta``
envelope. A ``list_changed`` notification drops that kind's listings; ``resources/updated`` drops that read.
Results that took input rounds are never stored (the caching page forbids it), nor are results without a
positive ``ttlMs``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any, Final

import trio

from .._wire.methods import METHODS
from ._listen import ChangeNotification

__all__ = ["ResultCache", "CACHEABLE_METHODS"]

#: The requests whose 2026-07-28 results carry caching hints (``server/discover`` is cached as the era itself).
CACHEABLE_METHODS: Final = frozenset(
    method for method, spec in METHODS.items() if spec.cache_hint_revisions and method != "server/discover"
)
#: The listings each kind of ``list_changed`` makes stale.
_STALE_AFTER: Final = {
    "tools": ("tools/list",),
    "prompts": ("prompts/list",),
    "resources": ("resources/list", "resources/templates/list"),
}


class ResultCache:
    """Raw results by (method, params) until their deadline on the trio clock; at most ``max_entries`` kept."""

    def __init__(self, max_entries: int = 256) -> None:
        self._entries: OrderedDict[tuple[str, str], tuple[float, Any]] = OrderedDict()
        self._max_entries = max_entries

    @staticmethod
    def key(method: str, params: dict[str, Any] | None) -> tuple[str, str]:
        shaping = {name: value for name, value in (params or {}).items() if name != "_meta"}
        return method, json.dumps(shaping, sort_keys=True, separators=(",", ":"))

    def get(self, method: str, params: dict[str, Any] | None) -> Any | None:
        """The stored result, if its time is not up."""
        key = self.key(method, params)
        entry = self._entries.get(key)
        if entry is None:
            return None
        deadline, result = entry
        if trio.current_time() >= deadline:
            del self._entries[key]
            return None
        return result

    def put(self, method: str, params: dict[str, Any] | None, result: Any) -> None:
        """Store ``result`` for its ``ttlMs`` (nothing is stored without a positive one)."""
        ttl_ms = result.get("ttlMs") if type(result) is dict else None
        if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, (int, float)) or not ttl_ms > 0:
            return
        key = self.key(method, params)
        self._entries[key] = (trio.current_time() + ttl_ms / 1000, result)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def invalidate(self, change: ChangeNotification) -> None:
        """Drop what ``change`` made stale."""
        if change.kind == "resource":
            stale = {self.key("resources/read", {"uri": change.uri})}
        else:
            methods = _STALE_AFTER.get(change.kind, ())
            stale = {key for key in self._entries if key[0] in methods}
        for key in stale:
            self._entries.pop(key, None)
