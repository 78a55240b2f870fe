"""Prompts: registration from functions, ``prompts/list`` entries, and turning results into messages."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

import attrs

from .._schema import FunctionSchema, describe_function
from .._wire.convert import WireFormatError, from_wire, to_wire
from .._wire.features import content_for_revision, project
from ..types import GetPromptResult, Icon, PromptMessage, TextContent
from ._blocking import Watch
from ._calls import coerce_strings, invoke, is_async_callable, is_context, refuse_unannotated_context
from ._tools import CONTENT_TYPES

__all__ = ["PromptDefinition", "make_prompt"]


@attrs.frozen(kw_only=True)
class PromptDefinition:
    """A registered prompt template: its function, arguments and listing metadata."""

    name: str
    fn: Callable[..., Any]
    schema: FunctionSchema
    title: str | None = None
    description: str | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None
    is_async: bool = True
    watch: Watch | None = None

    @property
    def argument_names(self) -> tuple[str, ...]:
        """The prompt's argument names, in declaration order."""
        return tuple(self.schema.input_schema.get("properties") or ())

    def wire(self, version: str) -> dict[str, Any]:
        """The ``Prompt`` object as ``version`` defines it."""
        properties: Mapping[str, Any] = self.schema.input_schema.get("properties") or {}
        required = set(self.schema.input_schema.get("required") or ())
        arguments = []
        for name, prop in properties.items():
            argument: dict[str, Any] = {"name": name}
            if prop.get("title"):
                argument["title"] = prop["title"]
            if prop.get("description"):
                argument["description"] = prop["description"]
            argument["required"] = name in required
            arguments.append(project("PromptArgument", argument, version))
        item: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            item["title"] = self.title
        if self.description is not None:
            item["description"] = self.description
        if arguments:
            item["arguments"] = arguments
        if self.icons:
            item["icons"] = [to_wire(icon) for icon in self.icons]
        if self.meta is not None:
            item["_meta"] = self.meta
        return project("Prompt", item, version)

    async def render(self, arguments: Mapping[str, str] | None, context: object, version: str) -> dict[str, Any]:
        """Run the prompt function and return the ``prompts/get`` result for ``version``.

        Raises ``ArgumentError`` for missing or invalid arguments.
        """
        kwargs = self.schema.bind(coerce_strings(self.schema.input_schema, dict(arguments or {})))
        for name in self.schema.skipped:
            kwargs[name] = context
        value = await invoke(self.fn, kwargs, is_async=self.is_async, watch=self.watch)
        if isinstance(value, GetPromptResult):
            result = to_wire(value)
        else:
            result = {"messages": [to_wire(message) for message in _messages(value)]}
            if self.description is not None:
                result["description"] = self.description
        for message in result["messages"]:
            message["content"] = content_for_revision(message["content"], version)
        return result


def _messages(value: Any) -> list[PromptMessage]:
    items = value if isinstance(value, (list, tuple)) else [value]
    messages = []
    for item in items:
        if isinstance(item, PromptMessage):
            messages.append(item)
        elif isinstance(item, str):
            messages.append(PromptMessage(role="user", content=TextContent(text=item)))
        elif isinstance(item, CONTENT_TYPES):
            messages.append(PromptMessage(role="user", content=item))
        elif isinstance(item, Mapping):
            try:
                messages.append(from_wire(dict(item), PromptMessage))
            except WireFormatError as exc:
                raise TypeError(f"prompt returned a dict that is not a message: {exc}") from None
        else:
            raise TypeError(f"a prompt function must return messages, strings or content, not {type(item).__name__}")
    return messages


class PromptOptions(TypedDict, total=False):
    """What ``Server.add_prompt()`` takes besides the function: the keywords of ``Server.prompt()``."""

    name: str | None
    title: str | None
    description: str | None
    icons: Sequence[Icon] | None
    meta: Mapping[str, Any] | None


def make_prompt(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    icons: Sequence[Icon] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> PromptDefinition:
    """Build a prompt from a function; its parameters (all strings on the wire) become the arguments."""
    name = name or fn.__name__
    refuse_unannotated_context(fn, f"prompt {name!r}")
    schema = describe_function(fn, skip=is_context, structured=False)
    return PromptDefinition(
        name=name,
        fn=fn,
        schema=schema,
        title=title,
        description=description if description is not None else schema.description,
        icons=list(icons) if icons else None,
        meta=dict(meta) if meta is not None else None,
        is_async=is_async_callable(fn),
    )
