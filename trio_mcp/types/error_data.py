"""Typed ``data`` of the MCP-defined JSON-RPC errors (the ``error`` object itself is :class:`ErrorObject`)."""

import attrs

from ._base import WireType
from .elicitation import ElicitRequestURLParams
from .lifecycle import ClientCapabilities

__all__ = [
    "UnsupportedProtocolVersionErrorData",
    "MissingRequiredClientCapabilityErrorData",
    "URLElicitationRequiredErrorData",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class UnsupportedProtocolVersionErrorData(WireType):
    """``data`` of ``-32022`` (2026-07-28): the revisions the server speaks and the one it was sent."""

    supported: list[str]
    requested: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class MissingRequiredClientCapabilityErrorData(WireType):
    """``data`` of ``-32021`` (2026-07-28): the client capabilities the request would have needed."""

    required_capabilities: ClientCapabilities


@attrs.frozen(kw_only=True, eq=False, repr=False)
class URLElicitationRequiredErrorData(WireType):
    """``data`` of ``-32042`` (2025-11-25 only): URL elicitations the user must complete before a retry."""

    elicitations: list[ElicitRequestURLParams]
