"""Resources: descriptors, templates, contents, and the ``resources/*`` params and results."""

import attrs

from ._base import (
    Annotations,
    CacheablePaginatedResult,
    CacheableResult,
    Icon,
    Meta,
    NotificationParams,
    RequestParams,
    WireType,
)
from .content import BlobResourceContents, ResourceContents, TextResourceContents
from .mrtr import InputResponses

__all__ = [
    "BlobResourceContents",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "ResourceUpdatedNotificationParams",
    "SubscribeRequestParams",
    "TextResourceContents",
    "UnsubscribeRequestParams",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Resource(WireType):
    """A readable piece of server data, as listed by ``resources/list``."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ResourceTemplate(WireType):
    """A family of resources addressed by an RFC 6570 URI template."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ListResourcesResult(CacheablePaginatedResult):
    """One page of ``resources/list``."""

    resources: list[Resource]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ListResourceTemplatesResult(CacheablePaginatedResult):
    """One page of ``resources/templates/list``."""

    resource_templates: list[ResourceTemplate]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ReadResourceRequestParams(RequestParams):
    """Params of ``resources/read``; the last two fields are for a 2026-07-28 multi round-trip retry."""

    uri: str
    input_responses: InputResponses | None = None
    request_state: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ReadResourceResult(CacheableResult):
    """What ``resources/read`` returns: one or more contents (a directory may yield several)."""

    contents: list[ResourceContents]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SubscribeRequestParams(RequestParams):
    """Params of ``resources/subscribe`` (legacy revisions only)."""

    uri: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class UnsubscribeRequestParams(RequestParams):
    """Params of ``resources/unsubscribe`` (legacy revisions only)."""

    uri: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ResourceUpdatedNotificationParams(NotificationParams):
    """Params of ``notifications/resources/updated``: the subscribed resource that changed."""

    uri: str
