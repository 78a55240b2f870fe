"""Completion: argument auto-completion for prompts and resource templates (``completion/complete``)."""

from typing import Literal, TypeAlias

import attrs

from ._base import RequestParams, Result, WireType

__all__ = [
    "PromptReference",
    "ResourceTemplateReference",
    "ResourceReference",
    "CompletionReference",
    "CompletionArgument",
    "CompletionContext",
    "CompleteRequestParams",
    "Completion",
    "CompleteResult",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PromptReference(WireType):
    """Points a completion request at a prompt, by name."""

    type: Literal["ref/prompt"] = "ref/prompt"
    name: str
    title: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ResourceTemplateReference(WireType):
    """Points a completion request at a resource template, by URI template."""

    type: Literal["ref/resource"] = "ref/resource"
    uri: str


#: The 2024-11-05 .. 2025-03-26 name of :class:`ResourceTemplateReference`.
ResourceReference: TypeAlias = ResourceTemplateReference
#: What a completion request refers to; dispatched on ``type``.
CompletionReference: TypeAlias = PromptReference | ResourceTemplateReference


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CompletionArgument(WireType):
    """The argument being completed and what the user typed so far."""

    name: str
    value: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CompletionContext(WireType):
    """Arguments already resolved, to narrow the suggestions (2025-06-18+)."""

    arguments: dict[str, str] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CompleteRequestParams(RequestParams):
    """Params of ``completion/complete``."""

    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Completion(WireType):
    """Suggested values (at most 100), with the total and whether more exist."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CompleteResult(Result):
    """What ``completion/complete`` returns."""

    completion: Completion
