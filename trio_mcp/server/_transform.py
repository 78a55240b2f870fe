"""Transforms: how a mounted (or proxied) server's tools look in the server they are mounted in.

``server.mount(prefix, other, transform=Transform(...))`` renames, hides, re-describes and filters the mounted
tools, and renames, documents, defaults or hides their arguments, without touching ``other``: a call to the
transformed tool is mapped back to the original's names and defaults before the original runs.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._schema import ArgumentError
from .._wire.convert import from_wire
from .._wire.versions import LATEST_VERSION
from ..types import Tool
from ._tools import ToolDefinition

__all__ = ["Transform", "ToolChange", "ArgumentChange", "TransformedTool"]

_NO_DEFAULT: Any = object()


@attrs.frozen(kw_only=True)
class ArgumentChange:
    """How one argument of a tool is shown: under ``name``, with ``description``, with a ``default`` (the
    argument becomes optional), or ``hidden`` (not shown at all; the ``default`` is always passed)."""

    name: str | None = None
    description: str | None = None
    default: Any = _NO_DEFAULT
    hidden: bool = False

    def __attrs_post_init__(self) -> None:
        if self.hidden and self.default is _NO_DEFAULT:
            raise ValueError("a hidden argument needs a default: the tool is always called with it")


@attrs.frozen(kw_only=True)
class ToolChange:
    """How one tool is shown: under ``name`` (the mount's prefix still goes before it), with ``title`` and
    ``description``, and its ``arguments`` changed (argument name -> ``ArgumentChange``)."""

    name: str | None = None
    title: str | None = None
    description: str | None = None
    arguments: Mapping[str, ArgumentChange] = attrs.field(factory=dict)


def _tag_set(tags: Any) -> frozenset[str]:
    if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags):
        raise TypeError(f"include_tags and exclude_tags are collections of tags (strings), not {tags!r}")
    return frozenset(tags)


@attrs.frozen(kw_only=True)
class Transform:
    """What a mount does to the tools it mounts.

    ``tools``: tool name (the mounted server's) -> a ``ToolChange``, or None to hide that tool.
    ``include_tags``: only tools with one of these tags are mounted; ``exclude_tags``: tools with one of these
    are not. A tool's tags are the list in its ``_meta``: ``tags`` (``@server.tool(meta={"tags": [...]})``), or
    where FastMCP puts them (``fastmcp.tags``, ``_fastmcp.tags``), so proxied FastMCP servers filter alike.
    ``keep``: a test each tool must pass (given its ``Tool``). A tool neither named nor filtered out is mounted as
    it is.
    """

    tools: Mapping[str, ToolChange | None] = attrs.field(factory=dict)
    include_tags: frozenset[str] | None = attrs.field(default=None, converter=attrs.converters.optional(_tag_set))
    exclude_tags: frozenset[str] = attrs.field(default=frozenset(), converter=_tag_set)
    keep: Callable[[Tool], bool] | None = None

    def hides(self, definition: ToolDefinition) -> bool:
        """True when the tool is not to be mounted: hidden by name, by its tags, or failing ``keep``."""
        if definition.name in self.tools and self.tools[definition.name] is None:
            return True
        if self.include_tags is not None or self.exclude_tags:
            tags = _tags_of(definition.meta)
            if (self.include_tags is not None and not tags & self.include_tags) or tags & self.exclude_tags:
                return True
        return self.keep is not None and not self.keep(from_wire(definition.wire(LATEST_VERSION), Tool))

    def apply(self, definition: ToolDefinition, name: str, change: ToolChange | None) -> ToolDefinition:
        """``definition`` as the parent shows it, under ``name``."""
        if change is None:
            return attrs.evolve(definition, name=name)
        title = change.title if change.title is not None else definition.title
        description = change.description if change.description is not None else definition.description
        if not change.arguments:
            return attrs.evolve(definition, name=name, title=title, description=description)
        fields = {field.name: getattr(definition, field.name) for field in attrs.fields(ToolDefinition)}
        fields.update(name=name, title=title, description=description)
        base = definition.input_schema if isinstance(definition, TransformedTool) else definition.schema.input_schema
        shown = _schema(base, change)
        return TransformedTool(**fields, arguments=dict(change.arguments), input_schema=shown, original=definition)


def _tags_of(meta: Mapping[str, Any] | None) -> frozenset[str]:
    """A tool's tags, from its ``_meta``: ``tags``, or FastMCP's ``fastmcp.tags`` / ``_fastmcp.tags``."""
    found: set[str] = set()
    for holder in (meta or {}, (meta or {}).get("fastmcp"), (meta or {}).get("_fastmcp")):
        tags = holder.get("tags") if isinstance(holder, Mapping) else None
        if isinstance(tags, (list, tuple)):
            found.update(tag for tag in tags if isinstance(tag, str))
    return frozenset(found)


def _schema(schema: dict[str, Any], change: ToolChange) -> dict[str, Any]:
    """The input schema with the arguments renamed, documented, defaulted or left out."""
    schema = copy.deepcopy(schema)
    properties: dict[str, Any] = schema.get("properties") or {}
    required: list[str] = list(schema.get("required") or [])
    for original, argument in change.arguments.items():
        if original not in properties:
            raise ValueError(f"tool {change.name or ''!r}: no argument {original!r} to change")
        prop = properties.pop(original)
        if original in required:
            required.remove(original)
        if argument.hidden:
            continue
        if argument.description is not None:
            prop["description"] = argument.description
        if argument.default is not _NO_DEFAULT:
            prop["default"] = argument.default
        elif original in (schema.get("required") or []):
            required.append(argument.name or original)
        properties[argument.name or original] = prop
    schema["properties"] = properties
    if required:
        schema["required"] = required
    else:
        schema.pop("required", None)
    return schema


@attrs.frozen(kw_only=True, slots=False)
class TransformedTool(ToolDefinition):
    """A mounted tool whose arguments are shown changed: calls are mapped back to the original's."""

    arguments: Mapping[str, ArgumentChange]
    #: The input schema clients see (the original's validates the call, once mapped back).
    input_schema: dict[str, Any]
    #: The tool as it was before this change (itself transformed, when mounted through two transforms).
    original: ToolDefinition

    def wire(self, version: str) -> dict[str, Any]:
        return {**super().wire(version), "inputSchema": self.input_schema}

    async def call(self, arguments: Mapping[str, Any] | None, context: object) -> Any:
        given = dict(arguments or {})
        unknown = [name for name in given if name in self._unshown]
        if unknown:
            raise ArgumentError([f"{name}: unexpected argument" for name in unknown])
        original: dict[str, Any] = {}
        for name, argument in self.arguments.items():
            shown = argument.name or name
            if not argument.hidden and shown in given:
                original[name] = given.pop(shown)
            elif argument.default is not _NO_DEFAULT:
                original[name] = copy.deepcopy(argument.default)
        return await self.original.call({**given, **original}, context)

    @functools.cached_property
    def _unshown(self) -> frozenset[str]:
        """Names a caller may not use: hidden arguments, and the original names of renamed ones."""
        hidden = {argument.name or name for name, argument in self.arguments.items() if argument.hidden}
        renamed = {name for name, argument in self.arguments.items() if argument.name not in (None, name)}
        return frozenset(hidden | renamed)
