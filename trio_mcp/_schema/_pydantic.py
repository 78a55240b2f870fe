"""Pydantic models as tool parameters and results, when pydantic is installed (it is never a dependency).

A model keeps its own JSON Schema (``model_json_schema()``) and its own validation (``model_validate``): trio_mcp
only places the schema under ``$defs`` and turns pydantic's errors into ours, with their paths.
"""

from __future__ import annotations

import sys
from typing import Any

from ._nodes import FAIL, Node, Run, SchemaContext
from ._util import Err, Path, mismatch

__all__ = ["is_pydantic_model", "PydanticNode"]


def is_pydantic_model(tp: Any) -> bool:
    """True for a pydantic (v2) ``BaseModel`` subclass; never imports pydantic (a model's module already did)."""
    pydantic = sys.modules.get("pydantic")
    if pydantic is None or not isinstance(tp, type):
        return False
    base = getattr(pydantic, "BaseModel", None)
    return base is not None and issubclass(tp, base) and hasattr(tp, "model_json_schema")


class PydanticNode(Node):
    """A pydantic model: its schema in ``$defs`` (with the models it uses), validated by pydantic itself."""

    expected = ("object",)
    is_object = True

    def __init__(self, cls: Any, where: str) -> None:
        self.cls = cls
        self.hashable = getattr(cls, "__hash__", None) is not None
        try:
            self.document: dict[str, Any] = cls.model_json_schema()
        except Exception as exc:  # pydantic's PydanticInvalidForJsonSchema and friends
            raise TypeError(f"{where}: pydantic cannot give a JSON Schema for {cls.__qualname__} ({exc})") from None
        self.where = where

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        body = dict(self.document)
        nested = body.pop("$defs", {})
        name = body.get("title") if isinstance(body.get("title"), str) else self.cls.__name__
        for def_name, definition in {**nested, name: body}.items():
            known = ctx.defs.get(def_name)
            if known is not None and known != definition:
                raise TypeError(
                    f"{self.where}: two different types are both called {def_name!r} in one schema; rename one of them"
                )
            ctx.defs[def_name] = definition
        return {"$ref": f"#/$defs/{name}"}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if not isinstance(value, dict):
            return run.fail(mismatch(path, self.expected, value))
        from pydantic import ValidationError

        try:
            return self.cls.model_validate(value)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                location = tuple(part for part in error.get("loc", ()) if isinstance(part, (str, int)))
                run.errors.append(Err(path + location, str(error.get("msg", "invalid value"))))
            return run.fail(Err(path, f"invalid {self.cls.__name__}")) if not exc.errors() else FAIL

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        if not isinstance(value, self.cls):
            return run.fail(mismatch(path, (self.cls.__name__,), value))
        return value.model_dump(mode="json", by_alias=True)
