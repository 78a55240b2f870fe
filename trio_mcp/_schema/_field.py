"""``Field``: the ``Annotated`` marker that adds descriptions, constraints and ``x-mcp-header`` to a property."""

from __future__ import annotations

import json
from typing import Any, Final

from .._core.mcp_headers import SAFE_INTEGER, TOKEN

__all__ = ["Field", "HEADER_TOKEN", "JS_SAFE_INTEGER"]

#: RFC 9110 section 5.1 ``token``: the only spelling an ``x-mcp-header`` name may have.
HEADER_TOKEN: Final = TOKEN
#: The integers JavaScript represents exactly; ``x-mcp-header`` integers must stay inside this range.
JS_SAFE_INTEGER: Final = SAFE_INTEGER


class Field:
    """Extra schema for one parameter, attrs field or TypedDict item: ``Annotated[int, Field(minimum=0)]``.

    ``header`` mirrors the argument into an ``Mcp-Param-<header>`` HTTP header (MCP 2026-07-28);
    other keywords are copied verbatim into the property's schema and are enforced when arguments are bound.
    """

    __slots__ = ("description", "title", "examples", "header", "extra_schema")

    def __init__(
        self,
        *,
        description: str | None = None,
        title: str | None = None,
        examples: list[Any] | None = None,
        header: str | None = None,
        **extra_schema: Any,
    ) -> None:
        if header is not None and (not isinstance(header, str) or not HEADER_TOKEN.match(header)):
            raise TypeError(
                f"Field(header={header!r}): an x-mcp-header name must be a non-empty RFC 9110 token "
                "(letters, digits and !#$%&'*+-.^_`|~ only; no spaces, colons or control characters)"
            )
        for name, value in (("examples", examples), *extra_schema.items()):
            try:
                json.dumps(value, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"Field({name}=...): value must be JSON-serialisable ({exc})") from None
        self.description = description
        self.title = title
        self.examples = examples
        self.header = header
        self.extra_schema: dict[str, Any] = extra_schema

    def __repr__(self) -> str:
        args = [
            f"{name}={getattr(self, name)!r}"
            for name in ("description", "title", "examples", "header")
            if getattr(self, name) is not None
        ]
        args += [f"{key}={value!r}" for key, value in self.extra_schema.items()]
        return f"Field({', '.join(args)})"

    def schema_keys(self) -> dict[str, Any]:
        """The keywords this marker adds to a property schema (fresh copies, safe to mutate)."""
        keys: dict[str, Any] = {}
        if self.title is not None:
            keys["title"] = self.title
        if self.description is not None:
            keys["description"] = self.description
        if self.examples is not None:
            keys["examples"] = json.loads(json.dumps(self.examples))
        if self.header is not None:
            keys["x-mcp-header"] = self.header
        keys.update(json.loads(json.dumps(self.extra_schema)))
        return keys
