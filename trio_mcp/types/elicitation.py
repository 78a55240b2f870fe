"""Elicitation: a server asking the user for input through the client (``elicitation/create``).

Form mode (2025-06-18+) sends a flat JSON Schema of primitive properties; URL mode (2025-11-25+) sends the user to
a web page. ``requested_schema`` stays a verbatim ``dict``; the ``*Schema`` classes below are typed helpers for
building or reading one property of it (``to_wire(StringSchema(...))``).
"""

from typing import Any, Literal, TypeAlias

import attrs

from ._base import NotificationParams, RequestParams, Result, TaskMetadata, WireType

__all__ = [
    "ElicitRequestFormParams",
    "ElicitRequestURLParams",
    "ElicitRequestParams",
    "ElicitResult",
    "ElicitationCompleteNotificationParams",
    "StringSchema",
    "NumberSchema",
    "BooleanSchema",
    "EnumOption",
    "UntitledSingleSelectEnumSchema",
    "TitledSingleSelectEnumSchema",
    "UntitledEnumItems",
    "TitledEnumItems",
    "UntitledMultiSelectEnumSchema",
    "TitledMultiSelectEnumSchema",
    "LegacyTitledEnumSchema",
    "SingleSelectEnumSchema",
    "MultiSelectEnumSchema",
    "EnumSchema",
    "PrimitiveSchemaDefinition",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ElicitRequestFormParams(RequestParams):
    """Ask the user to fill in a form described by ``requested_schema`` (``mode`` may be omitted)."""

    mode: Literal["form"] | None = None
    message: str
    requested_schema: dict[str, Any]
    task: TaskMetadata | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ElicitRequestURLParams(RequestParams):
    """Send the user to ``url`` for an out-of-band interaction (2025-11-25+).

    ``elicitation_id`` exists only in 2025-11-25; 2026-07-28 correlates through ``requestState`` instead.
    """

    mode: Literal["url"] = "url"
    message: str
    url: str
    elicitation_id: str | None = None
    task: TaskMetadata | None = None


#: Params of ``elicitation/create``; the converter picks the class by ``mode``.
ElicitRequestParams: TypeAlias = ElicitRequestFormParams | ElicitRequestURLParams


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ElicitResult(Result):
    """The user's answer: ``content`` (flat JSON values) is present only when ``action`` is ``accept``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ElicitationCompleteNotificationParams(NotificationParams):
    """Params of ``notifications/elicitation/complete``: a URL-mode elicitation finished (2025-11-25 only)."""

    elicitation_id: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class StringSchema(WireType):
    """A free-text form field."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    default: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class NumberSchema(WireType):
    """A numeric form field; ``type`` is ``number`` or ``integer``."""

    type: Literal["number", "integer"] = "number"
    title: str | None = None
    description: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    default: float | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class BooleanSchema(WireType):
    """A yes/no form field."""

    type: Literal["boolean"] = "boolean"
    title: str | None = None
    description: str | None = None
    default: bool | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class EnumOption(WireType):
    """One choice of a titled enum: the value sent back and the label shown."""

    const: str
    title: str


@attrs.frozen(kw_only=True, eq=False, repr=False)
class UntitledSingleSelectEnumSchema(WireType):
    """Pick one of ``enum``; the values double as labels."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    default: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class TitledSingleSelectEnumSchema(WireType):
    """Pick one of ``one_of``, each with its own label (2025-11-25+)."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    one_of: list[EnumOption]
    default: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class UntitledEnumItems(WireType):
    """The ``items`` of an untitled multi-select: plain string values."""

    type: Literal["string"] = "string"
    enum: list[str]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class TitledEnumItems(WireType):
    """The ``items`` of a titled multi-select: labelled values."""

    any_of: list[EnumOption]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class UntitledMultiSelectEnumSchema(WireType):
    """Pick several of a list of plain values (2025-11-25+)."""

    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: UntitledEnumItems
    default: list[str] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class TitledMultiSelectEnumSchema(WireType):
    """Pick several of a list of labelled values (2025-11-25+)."""

    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: TitledEnumItems
    default: list[str] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class LegacyTitledEnumSchema(WireType):
    """The 2025-06-18 enum with parallel ``enum_names`` labels; still accepted, no longer recommended."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    enum_names: list[str] | None = None
    default: str | None = None


SingleSelectEnumSchema: TypeAlias = UntitledSingleSelectEnumSchema | TitledSingleSelectEnumSchema
MultiSelectEnumSchema: TypeAlias = UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema
EnumSchema: TypeAlias = (
    UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
#: One property of a form's ``requested_schema``; the converter picks the class from ``type`` and the keys present.
PrimitiveSchemaDefinition: TypeAlias = (
    StringSchema
    | NumberSchema
    | BooleanSchema
    | UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)
