"""``decimal.Decimal`` parameters and results: exact numbers, given as JSON numbers or as decimal strings."""

from __future__ import annotations

import decimal
import re
from typing import Any, Final

from ._nodes import Node, Run, SchemaContext
from ._util import Path, mismatch

__all__ = ["DecimalNode"]

_DECIMAL_TEXT: Final = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
_MATCH: Final = re.compile(_DECIMAL_TEXT)


class DecimalNode(Node):
    """``Decimal``: accepts a JSON number or a string such as ``"12.30"`` (so no precision is lost on the way in);
    results are dumped as strings for the same reason. NaN and infinities are refused."""

    expected = ("number", "decimal string")

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"type": ["number", "string"], "pattern": _DECIMAL_TEXT}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, bool):
            return run.fail(mismatch(path, self.expected, value))
        if isinstance(value, int):
            return decimal.Decimal(value)
        if isinstance(value, float):
            return decimal.Decimal(repr(value))  # the shortest text that round-trips: 0.1 stays 0.1
        if isinstance(value, str) and _MATCH.match(value):
            return decimal.Decimal(value)
        return run.fail(mismatch(path, self.expected, value))

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, decimal.Decimal) and value.is_finite():
            return str(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return run.fail(mismatch(path, ("finite Decimal",), value))
