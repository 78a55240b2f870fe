"""Type hints ↔ JSON Schema (2020-12) ↔ validation: the core behind tool declarations and structured output.

* ``describe_function(fn)`` turns a tool function's signature into ``FunctionSchema``: the ``inputSchema`` and
  ``outputSchema`` to advertise, ``bind()`` to validate and convert received arguments to the annotated types,
  and ``dump_output()`` to turn a return value into ``structuredContent``.
* ``json_schema_for(tp)`` gives the schema of one annotation; ``Field`` adds descriptions, constraints and
  ``x-mcp-header`` to a parameter via ``Annotated``.
* ``validate(instance, schema)`` checks JSON against hand-written schemas (a peer's ``outputSchema``, say),
  bounded in depth and work; ``check_schema_bounded(schema)`` vets a received schema's size up front.

Decisions, all deliberate:

* Generated object schemas say ``"additionalProperties": false`` (top level and attrs/TypedDict types), and
  ``bind`` refuses unknown names with a "did you mean" hint: a misspelt argument is an error, not a no-op.
* Generated schemas omit ``$schema``; MCP takes 2020-12 as the default dialect. Named types (attrs classes,
  dataclasses, TypedDicts and pydantic models) live in a top-level ``$defs`` and are referenced as
  ``#/$defs/Name``; enums are inlined.
* A pydantic model (when pydantic is installed; it is never a dependency) keeps its own JSON Schema and its own
  ``model_validate``; results are ``model_dump(mode="json")``.
* ``Path`` is a non-empty string (only parsed: confining it is the tool's job); ``Decimal`` accepts a number or a
  decimal string and is dumped as a string, so no precision is lost either way.
* ``bind`` accepts exactly what the schema accepts: no string → number coercion, ``bool`` is never an integer or
  number, ``3.0`` is an ``int`` (JSON Schema counts it as an integer), and an ``int`` is a ``float``.
  Date/time/UUID strings must also parse.
* Output of a non-object type (``int``, ``list[str]``, ``Optional[Model]``, unions...) is wrapped as
  ``{"result": value}``; an attrs class, TypedDict or ``dict[str, T]`` is the structured content itself.
  ``dump_output`` checks the value against the return annotation (``OutputError``), drops TypedDict keys the
  type does not declare, and sorts sets by their JSON text so output is deterministic.
* ``Optional`` is a ``"type": [T, "null"]`` list where that means the same as ``anyOf``. An explicit ``null``
  for a parameter that is not Optional is an error even when the parameter has a default.
* attrs fields appear under their ``__init__`` name (``_secret`` is ``secret``); ``init=False`` fields are left
  out. A parameter default that does not dump under its annotation is left out of the schema.
* ``x-mcp-header`` goes only on a top-level ``str``/``int``/``bool`` parameter (Literal and Enum of those are
  fine, Optional is not: give a default instead); names are RFC 9110 tokens, unique ignoring case, and header
  integers are bounded to JavaScript's safe range.
"""

from __future__ import annotations

from ._compile import json_schema_for
from ._field import Field
from ._function import ArgumentError, FunctionSchema, OutputError, describe_function
from ._validator import check_schema_bounded, validate

__all__ = [
    "Field",
    "FunctionSchema",
    "ArgumentError",
    "OutputError",
    "describe_function",
    "json_schema_for",
    "validate",
    "check_schema_bounded",
]
