"""Prompts: templates a server offers, and the ``prompts/*`` params and results."""

import attrs

from ._base import CacheablePaginatedResult, Icon, Meta, RequestParams, Result, Role, WireType
from .content import ContentBlock
from .mrtr import InputResponses

__all__ = [
    "PromptArgument",
    "Prompt",
    "PromptMessage",
    "ListPromptsResult",
    "GetPromptRequestParams",
    "GetPromptResult",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PromptArgument(WireType):
    """One argument a prompt template accepts."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class Prompt(WireType):
    """A prompt template, as listed by ``prompts/list``."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class PromptMessage(WireType):
    """One message of a rendered prompt."""

    role: Role
    content: ContentBlock


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ListPromptsResult(CacheablePaginatedResult):
    """One page of ``prompts/list``."""

    prompts: list[Prompt]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class GetPromptRequestParams(RequestParams):
    """Params of ``prompts/get``; the last two fields are for a 2026-07-28 multi round-trip retry."""

    name: str
    arguments: dict[str, str] | None = None
    input_responses: InputResponses | None = None
    request_state: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class GetPromptResult(Result):
    """A rendered prompt: the messages to hand to the model."""

    description: str | None = None
    messages: list[PromptMessage]
