"""Lifecycle: implementations, capabilities, ``initialize`` (legacy revisions) and ``server/discover`` (2026-07-28).

Capability values that the schema leaves as bare objects (``logging``, ``completions``, ``experimental``,
``extensions``, the ``sampling``/``elicitation`` sub-flags) are plain JSON dicts: their presence is the signal.
"""

from typing import Any

import attrs

from ._base import CacheableResult, Icon, RequestParams, Result, WireType

__all__ = [
    "ClientCapabilities",
    "ClientTasksCapability",
    "DiscoverResult",
    "ElicitationCapability",
    "Implementation",
    "InitializeRequestParams",
    "InitializeResult",
    "PromptsCapability",
    "ResourcesCapability",
    "RootsCapability",
    "SamplingCapability",
    "ServerCapabilities",
    "ServerTasksCapability",
    "ToolsCapability",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Implementation(WireType):
    """Name and version of an MCP client or server (``clientInfo`` / ``serverInfo``)."""

    name: str
    title: str | None = None
    version: str
    description: str | None = None
    website_url: str | None = None
    icons: list[Icon] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class RootsCapability(WireType):
    """The client can answer ``roots/list``; ``list_changed`` exists on legacy revisions only."""

    list_changed: bool | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SamplingCapability(WireType):
    """The client can sample; ``context`` and ``tools`` (2025-11-25+) declare the optional parts."""

    context: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ElicitationCapability(WireType):
    """The client can elicit; ``form`` and ``url`` (2025-11-25+) say which modes (none given means form)."""

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ClientTasksCapability(WireType):
    """2025-11-25 core tasks on the client side; ``requests`` maps request kinds that may become tasks."""

    cancel: dict[str, Any] | None = None
    requests: dict[str, Any] | None = None
    list: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ClientCapabilities(WireType):
    """What a client supports: sent in ``initialize``, or in every request's ``_meta`` from 2026-07-28."""

    experimental: dict[str, Any] | None = None
    roots: RootsCapability | None = None
    sampling: SamplingCapability | None = None
    elicitation: ElicitationCapability | None = None
    tasks: ClientTasksCapability | None = None
    extensions: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PromptsCapability(WireType):
    """The server offers prompts; ``list_changed`` says it reports changes to the list."""

    list_changed: bool | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ResourcesCapability(WireType):
    """The server offers resources; it may support per-resource subscriptions and list-change reports."""

    subscribe: bool | None = None
    list_changed: bool | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ToolsCapability(WireType):
    """The server offers tools; ``list_changed`` says it reports changes to the list."""

    list_changed: bool | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ServerTasksCapability(WireType):
    """2025-11-25 core tasks on the server side; ``requests`` maps request kinds that may become tasks."""

    cancel: dict[str, Any] | None = None
    requests: dict[str, Any] | None = None
    list: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ServerCapabilities(WireType):
    """What a server supports: in ``InitializeResult`` (handshake) or ``DiscoverResult`` (2026-07-28)."""

    experimental: dict[str, Any] | None = None
    logging: dict[str, Any] | None = None
    completions: dict[str, Any] | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    tasks: ServerTasksCapability | None = None
    extensions: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class InitializeRequestParams(RequestParams):
    """Params of ``initialize``: the client's preferred revision, capabilities and identity."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


@attrs.frozen(kw_only=True, eq=False, repr=False)
class InitializeResult(Result):
    """The server's half of the handshake: the agreed revision, its capabilities and identity."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class DiscoverResult(CacheableResult):
    """The answer to ``server/discover`` (2026-07-28): revisions, capabilities, instructions.

    The server's identity travels in ``_meta["io.modelcontextprotocol/serverInfo"]``.
    """

    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | None = None
