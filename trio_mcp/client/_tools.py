"""What the client checks in tool definitions it receives, and in the structured results of calls.

* ``tool_problem(tool)`` says why a listed tool must be dropped: an ``inputSchema``/``outputSchema`` too large or
  too deeply nested to use safely (``check_schema_bounded``), or an ``x-mcp-header`` annotation that breaks the
  rules of 2026-07-28 (``basic/transports/streamable-http.mdx`` §Request Metadata; SEP-2243). The released rules,
  which are stricter than the spring-2026 draft of the tools page:

  - the name is a non-empty RFC 9110 token, unique among the schema's annotations ignoring case;
  - it sits on an ``integer``, ``string`` or ``boolean`` property (never ``number``); a ``null`` alongside is
    allowed, since a null value simply leaves the header out;
  - that property is reachable from the root through ``properties`` keys only (not through ``items``,
    ``anyOf``, ``$defs``, ``$ref`` ...), and it is not the root itself.

  "Clients MUST drop tools with invalid annotations from tools/list and SHOULD log a warning": the client does so
  on every revision, since a server that writes the annotation means it for clients of any age.
* ``StructuredContentError`` is raised when a result's ``structuredContent`` does not match the tool's
  ``outputSchema``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.mcp_headers import HeaderRuleError, header_paths
from .._schema import check_schema_bounded
from ..errors import RemoteProtocolError
from ..types import CallToolResult, Tool

__all__ = ["StructuredContentError", "tool_problem", "header_problem"]


class StructuredContentError(RemoteProtocolError):
    """A tool's ``structuredContent`` broke the ``outputSchema`` it declared (the server's fault).

    ``tool`` names the tool, ``errors`` lists the mismatches, and ``result`` keeps the whole answer for callers
    who want to look at it anyway (or pass ``validate_output=False`` to skip the check).
    """

    def __init__(self, tool: str, errors: list[str], result: CallToolResult) -> None:
        shown = "; ".join(errors[:5]) + (f"; ... ({len(errors) - 5} more)" if len(errors) > 5 else "")
        super().__init__(f"tool {tool!r} returned structured content that does not match its outputSchema: {shown}")
        self.tool = tool
        self.errors = errors
        self.result = result


def tool_problem(tool: Tool) -> str | None:
    """Why ``tool`` must be dropped from a ``tools/list`` result, or None if it may be used."""
    for label, schema in (("inputSchema", tool.input_schema), ("outputSchema", tool.output_schema)):
        if schema is None:
            continue
        try:
            check_schema_bounded(schema)
        except ValueError as exc:
            return f"its {label} cannot be used safely: {exc}"
    return header_problem(tool.input_schema)


def header_problem(input_schema: Mapping[str, Any]) -> str | None:
    """The first ``x-mcp-header`` rule ``input_schema`` breaks, as a sentence; None if it keeps them all."""
    try:
        header_paths(input_schema)
    except HeaderRuleError as exc:
        return str(exc)
    return None
