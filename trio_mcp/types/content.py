"""Content blocks: what tool results, prompt messages and sampling messages are made of.

The converter dispatches the unions below on the ``type`` key with a dictionary lookup. A block whose ``type`` it
does not know becomes :class:`UnknownContent`, which is written back exactly as it was received.
"""

from typing import Any, Literal, TypeAlias

import attrs

from ._base import Annotations, Icon, Meta, WireType

__all__ = [
    "TextContent",
    "ImageContent",
    "AudioContent",
    "ResourceLink",
    "EmbeddedResource",
    "ToolUseContent",
    "ToolResultContent",
    "UnknownContent",
    "ContentBlock",
    "SamplingContent",
    "SamplingMessageContentBlock",
    "CONTENT_TYPES",
    "SAMPLING_CONTENT_TYPES",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class TextResourceContents(WireType):
    """The contents of a resource that is text."""

    uri: str
    mime_type: str | None = None
    text: str
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class BlobResourceContents(WireType):
    """The contents of a binary resource, base64-encoded in ``blob``."""

    uri: str
    mime_type: str | None = None
    blob: str
    meta: Meta | None = None


#: Either kind of resource contents; the converter picks one by the presence of ``text`` or ``blob``.
ResourceContents: TypeAlias = TextResourceContents | BlobResourceContents


@attrs.frozen(kw_only=True, eq=False, repr=False)
class TextContent(WireType):
    """Plain text."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ImageContent(WireType):
    """An image, base64-encoded in ``data``."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class AudioContent(WireType):
    """An audio clip, base64-encoded in ``data`` (2025-03-26+)."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ResourceLink(WireType):
    """A reference to a resource the client can read or subscribe to (2025-06-18+); not its contents."""

    type: Literal["resource_link"] = "resource_link"
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
class EmbeddedResource(WireType):
    """The contents of a resource placed inline in a message or tool result."""

    type: Literal["resource"] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ToolUseContent(WireType):
    """A model's request to call a tool, inside a sampling message (2025-11-25+)."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ToolResultContent(WireType):
    """The outcome of a :class:`ToolUseContent`, sent back to the model in a sampling message (2025-11-25+)."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: "list[ContentBlock]"
    structured_content: Any = None
    is_error: bool | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class UnknownContent(WireType):
    """A content block of a ``type`` this library does not know, kept verbatim in ``raw``."""

    raw: dict[str, Any]

    @property
    def type(self) -> Any:
        """The block's ``type`` key, as received."""
        return self.raw.get("type")


#: Content of tool results and prompt messages.
ContentBlock: TypeAlias = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent
#: Content of sampling messages.
SamplingContent: TypeAlias = (
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent | UnknownContent
)
#: The schema's name for :data:`SamplingContent`.
SamplingMessageContentBlock: TypeAlias = SamplingContent

#: ``type`` tag -> class, for :data:`ContentBlock`.
CONTENT_TYPES: dict[str, type[WireType]] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "resource_link": ResourceLink,
    "resource": EmbeddedResource,
}
#: ``type`` tag -> class, for :data:`SamplingContent`.
SAMPLING_CONTENT_TYPES: dict[str, type[WireType]] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "tool_use": ToolUseContent,
    "tool_result": ToolResultContent,
}

# ToolResultContent holds content blocks, one of which it is: its annotation names the union defined after it.
attrs.resolve_types(ToolResultContent)
