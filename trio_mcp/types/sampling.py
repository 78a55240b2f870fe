"""Sampling: a server asking the client's model for a completion (``sampling/createMessage``).

A JSON-RPC request up to 2025-11-25; from 2026-07-28 only an embedded input request, and deprecated.
"""

from typing import Any, Literal, TypeAlias

import attrs

from ._base import Meta, RequestParams, Result, Role, TaskMetadata, WireType
from .content import SamplingContent
from .tools import Tool

__all__ = [
    "ModelHint",
    "ModelPreferences",
    "SamplingMessageContent",
    "SamplingMessage",
    "ToolChoice",
    "CreateMessageRequestParams",
    "CreateMessageResult",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ModelHint(WireType):
    """A model name (or part of one) the server would like the client to pick."""

    name: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ModelPreferences(WireType):
    """The server's preferences for model selection; priorities run from 0 to 1."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


#: One sampling content block, or (2025-11-25+) a list of them.
SamplingMessageContent: TypeAlias = SamplingContent | list[SamplingContent]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SamplingMessage(WireType):
    """One turn of the conversation sent to, or returned by, the model."""

    role: Role
    content: SamplingMessageContent
    meta: Meta | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ToolChoice(WireType):
    """Whether the model must, may or must not call the offered tools (2025-11-25+)."""

    mode: Literal["auto", "required", "none"] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CreateMessageRequestParams(RequestParams):
    """Params of ``sampling/createMessage``."""

    messages: list[SamplingMessage]
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    max_tokens: int
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    task: TaskMetadata | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CreateMessageResult(Result):
    """The model's reply; ``stop_reason`` is an open string (``endTurn``, ``maxTokens``, ``toolUse``, ...)."""

    role: Role
    content: SamplingMessageContent
    model: str
    stop_reason: str | None = None
