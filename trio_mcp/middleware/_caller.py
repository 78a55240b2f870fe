"""Who sent a request and what it is about, as the shipped middleware key their state by them."""

from __future__ import annotations

from typing import Any

from .._identity import caller_key as _identity_key
from .._middleware import RequestInfo

__all__ = ["caller_key", "target", "key_of", "check_per", "check_tools", "applies"]


_last: tuple[Any, str] = (object(), "")  # the last principal keyed (held, so never another's id) and its key


def caller_key(principal: Any) -> str:
    """The caller's key (``trio_mcp._identity``), remembered for the last principal: the middleware of one
    request, and the requests of one connection, ask for the same one again and again."""
    global _last
    last = _last  # one read: another thread may swap the pair, never tear it
    if principal is not last[0]:
        last = _last = (principal, _identity_key(principal))
    return last[1]


def target(call: RequestInfo) -> str | None:
    """The tool, prompt or resource a request names (None for a listing, ``ping``, a custom method ...)."""
    params = call.params or {}
    name = params.get("uri") if call.method in ("resources/read", "resources/subscribe") else params.get("name")
    return name if isinstance(name, str) and call.method != "completion/complete" else None


def key_of(call: RequestInfo, per: tuple[str, ...]) -> str:
    """The state key of ``call`` for ``per`` ("principal", "tool"): the caller's key and/or what it names."""
    parts = []
    if "principal" in per:
        parts.append(caller_key(call.principal))
    if "tool" in per:
        parts.append(f"{call.method} {target(call) or ''}")
    return "\x1f".join(parts)


def check_per(per: Any) -> tuple[str, ...]:
    """``per=`` of a limit, checked: a sequence of "principal" and "tool"."""
    if isinstance(per, str):
        per = (per,)
    try:
        parts = tuple(per)
    except TypeError:
        raise TypeError(f"per must be a sequence of 'principal' and 'tool', not {per!r}") from None
    if not parts or any(part not in ("principal", "tool") for part in parts):
        raise ValueError(f"per must name 'principal', 'tool' or both, not {per!r}")
    return parts


def check_tools(tools: Any) -> frozenset[str] | None:
    """``tools=`` of a limit, checked: None (every request) or the names of the tools it applies to."""
    if tools is None:
        return None
    if isinstance(tools, str) or not all(isinstance(name, str) for name in tools):
        raise TypeError(f"tools must be a collection of tool names, or None, not {tools!r}")
    return frozenset(tools)


def applies(call: RequestInfo, tools: frozenset[str] | None) -> bool:
    """True if a limit on ``tools`` (None: every request) applies to ``call``; never to a notification."""
    if call.is_notification:
        return False
    return tools is None or (call.method == "tools/call" and target(call) in tools)
