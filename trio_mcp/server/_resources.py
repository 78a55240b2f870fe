"""Resources and resource templates: registration, listing, and turning handler results into contents."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

import attrs

from .._schema import FunctionSchema, describe_function
from .._uri_template import UriTemplate
from .._wire.convert import to_wire
from .._wire.features import project
from ..types import Annotations, BlobResourceContents, Icon, TextResourceContents
from ._blocking import Watch
from ._calls import coerce_strings, invoke, is_async_callable, is_context, refuse_unannotated_context

__all__ = ["ResourceDefinition", "make_resource", "contents_to_wire"]


@attrs.frozen(kw_only=True)
class ResourceDefinition:
    """A static resource (fixed URI) or a resource template (RFC 6570 URI template) and its handler."""

    uri: str
    name: str
    fn: Callable[..., Any]
    schema: FunctionSchema
    template: UriTemplate | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    is_async: bool = True
    watch: Watch | None = None

    def wire(self, version: str) -> dict[str, Any]:
        """The ``Resource`` (or ``ResourceTemplate``) object as ``version`` defines it."""
        item: dict[str, Any] = {"uriTemplate" if self.template is not None else "uri": self.uri, "name": self.name}
        if self.title is not None:
            item["title"] = self.title
        if self.description is not None:
            item["description"] = self.description
        if self.mime_type is not None:
            item["mimeType"] = self.mime_type
        if self.annotations is not None:
            annotations = project("Annotations", to_wire(self.annotations), version)
            if annotations:
                item["annotations"] = annotations
        if self.size is not None and self.template is None:
            item["size"] = self.size
        if self.icons:
            item["icons"] = [to_wire(icon) for icon in self.icons]
        if self.meta is not None:
            item["_meta"] = self.meta
        return project("ResourceTemplate" if self.template is not None else "Resource", item, version)

    async def read(self, uri: str, variables: Mapping[str, str | list[str]], context: object) -> list[dict[str, Any]]:
        """Run the handler for ``uri`` and return the ``contents`` list of a ``resources/read`` result."""
        kwargs = self.schema.bind(coerce_strings(self.schema.input_schema, variables))
        for name in self.schema.skipped:
            kwargs[name] = context
        value = await invoke(self.fn, kwargs, is_async=self.is_async, watch=self.watch)
        return contents_to_wire(value, uri, self.mime_type)


class ResourceOptions(TypedDict, total=False):
    """What ``Server.add_resource()`` takes besides the function and URI: the keywords of ``Server.resource()``."""

    name: str | None
    title: str | None
    description: str | None
    mime_type: str | None
    annotations: Annotations | Mapping[str, Any] | None
    size: int | None
    icons: Sequence[Icon] | None
    meta: Mapping[str, Any] | None


def make_resource(
    fn: Callable[..., Any],
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    annotations: Annotations | Mapping[str, Any] | None = None,
    size: int | None = None,
    icons: Sequence[Icon] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> ResourceDefinition:
    """Build a resource from a function; a URI with ``{variables}`` makes a template.

    A template's variables must all be parameters of ``fn`` (besides an optional ``Context``), and a
    static resource's function takes no other parameters.
    """
    refuse_unannotated_context(fn, f"resource {uri!r}")
    template = UriTemplate(uri) if "{" in uri else None
    schema = describe_function(fn, skip=is_context, structured=False)
    parameters = set(schema.input_schema.get("properties") or ())
    required = set(schema.input_schema.get("required") or ())
    variables = set(template.variables) if template is not None else set()
    if variables - parameters:
        raise TypeError(f"resource {uri!r}: {fn.__name__} has no parameter for {sorted(variables - parameters)}")
    if required - variables:
        raise TypeError(f"resource {uri!r}: parameters {sorted(required - variables)} are not URI variables")
    if isinstance(annotations, Mapping):
        annotations = Annotations(**annotations)
    return ResourceDefinition(
        uri=uri,
        name=name or fn.__name__,
        fn=fn,
        schema=schema,
        template=template,
        title=title,
        description=description if description is not None else schema.description,
        mime_type=mime_type,
        annotations=annotations,
        size=size,
        icons=list(icons) if icons else None,
        meta=dict(meta) if meta is not None else None,
        is_async=is_async_callable(fn),
    )


def contents_to_wire(value: Any, uri: str, mime_type: str | None) -> list[dict[str, Any]]:
    """What a resource handler returned, as ``resources/read`` contents.

    ``str`` is text, ``bytes`` is a base64 blob, ``TextResourceContents``/``BlobResourceContents`` (or a
    list of them) pass through, and anything else is serialised as JSON text.
    """
    if isinstance(value, (TextResourceContents, BlobResourceContents)):
        return [to_wire(value)]
    if (
        isinstance(value, list)
        and value
        and all(isinstance(item, (TextResourceContents, BlobResourceContents)) for item in value)
    ):
        return [to_wire(item) for item in value]
    item: dict[str, Any] = {"uri": uri}
    if isinstance(value, (bytes, bytearray, memoryview)):
        item["mimeType"] = mime_type or "application/octet-stream"
        item["blob"] = base64.b64encode(bytes(value)).decode("ascii")
        return [item]
    if isinstance(value, str):
        item["mimeType"] = mime_type or "text/plain"
        item["text"] = value
        return [item]
    item["mimeType"] = mime_type or "application/json"
    item["text"] = json.dumps(value, ensure_ascii=False, default=_json_default)
    return [item]


def _json_default(value: Any) -> Any:
    if attrs.has(type(value)):
        return to_wire(value) if hasattr(value, "extra") else attrs.asdict(value)
    raise TypeError(f"resource value of type {type(value).__name__} is not JSON serialisable")
