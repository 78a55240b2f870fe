"""Scopes per tool, resource and prompt: what each needs, what a caller may see, and the refusal.

Pure bookkeeping for ``Server`` (``@server.tool(scopes=[...])``); the HTTP side turns a missing scope into
403 ``insufficient_scope`` before the request reaches the server (``ResourceServerAuth``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..errors import INVALID_REQUEST, McpError

__all__ = ["ScopeTable", "admit_scopes", "scopes_admitted", "scopes_of_principal"]

#: The params of the request whose scopes the HTTP guard checked already in this task (``ResourceServerAuth``):
#: the server does not check them a second time. Held by identity; the next request's params are another object.
_admitted: contextvars.ContextVar[Any] = contextvars.ContextVar("trio_mcp_admitted_params", default=None)


def admit_scopes(message: Any) -> None:
    """Note that the scopes ``message`` (one decoded JSON-RPC message) needs were checked for its caller."""
    params = message.get("params") if type(message) is dict else None
    if type(params) is dict:
        _admitted.set(params)


def scopes_admitted(params: Mapping[str, Any]) -> bool:
    """Whether the scopes of the request with these ``params`` were checked already (``admit_scopes``)."""
    return _admitted.get() is params


#: Which registry a request method looks in, and the parameter naming the item.
_TARGETS = {"tools/call": ("tools", "name"), "prompts/get": ("prompts", "name"), "resources/read": ("resources", "uri")}
#: Which registry a listing shows, and the field naming each item.
_LISTINGS = {
    "tools/list": ("tools", "name"),
    "prompts/list": ("prompts", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resources", "uriTemplate"),
}


def scopes_of_principal(principal: Any) -> frozenset[str] | None:
    """The scopes a principal holds; None when the transport authenticated nobody (no scope check applies)."""
    if principal is None:
        return None
    scopes = getattr(principal, "scopes", None)
    return frozenset(scopes) if scopes is not None else frozenset()


class ScopeTable:
    """The scopes each registered item needs (by registry and name, or URI / URI template for resources)."""

    def __init__(self) -> None:
        self._needs: dict[tuple[str, str], frozenset[str]] = {}
        #: Whether any item needs a scope: a plain attribute, read for every request (kept by ``require``).
        self.in_use = False

    @staticmethod
    def checked(scopes: Iterable[str]) -> frozenset[str]:
        """``scopes`` as a set, or ``ValueError`` for one that is not a scope token (RFC 6749 §3.3)."""
        if isinstance(scopes, str):
            raise ValueError(f"scopes must be a list of scope names, not the string {scopes!r}")
        wanted = frozenset(scopes)
        if any(not isinstance(scope, str) or not scope or " " in scope for scope in wanted):
            raise ValueError(f"scopes must be non-empty strings without spaces, not {sorted(map(repr, wanted))}")
        return wanted

    def require(self, kind: str, key: str, scopes: Iterable[str]) -> None:
        wanted = self.checked(scopes)
        if wanted:
            self._needs[(kind, key)] = wanted
        else:
            self._needs.pop((kind, key), None)
        self.in_use = bool(self._needs)

    def needed(
        self, method: str, params: Mapping[str, Any], resource_key: Callable[[str], str | None] = lambda uri: uri
    ) -> frozenset[str]:
        """The scopes a request needs (``resource_key`` maps a URI to its registered URI or template)."""
        target = _TARGETS.get(method)
        if target is None or not self._needs:
            return frozenset()
        kind, field = target
        value = params.get(field)
        if not isinstance(value, str):
            return frozenset()
        key = resource_key(value) if kind == "resources" else value
        return self._needs.get((kind, key), frozenset()) if key is not None else frozenset()

    def visible(self, method: str, items: list[dict[str, Any]], principal: Any) -> list[dict[str, Any]]:
        """The items of a listing the principal holds every needed scope for."""
        held = scopes_of_principal(principal)
        listing = _LISTINGS.get(method)
        if held is None or listing is None or not self._needs:
            return items
        kind, field = listing
        return [item for item in items if self._needs.get((kind, str(item.get(field))), frozenset()) <= held]

    def check(self, needed: frozenset[str], principal: Any) -> None:
        """Refuse a request whose principal lacks a needed scope (transports without a step-up challenge)."""
        held = scopes_of_principal(principal)
        if held is not None and not needed <= held:
            raise McpError(INVALID_REQUEST, f"Insufficient scope: requires {' '.join(sorted(needed - held))}")
