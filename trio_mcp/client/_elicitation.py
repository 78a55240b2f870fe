"""Helpers for answering form-mode elicitation (``elicitation/create``)."""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import Any

from .._schema import validate

__all__ = ["fill_elicitation_defaults"]

logger = logging.getLogger("trio_mcp.client")


def fill_elicitation_defaults(
    requested_schema: Mapping[str, Any], content: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Return ``content`` plus the schema's ``default`` for every property the user left out (SEP-1034).

    Works for every kind of form field 2025-11-25 defines: string, number, integer, boolean, single-select enums
    (plain, titled ``oneOf``, legacy ``enumNames``) and multi-select arrays. Values the user gave are never
    replaced; a default that does not fit its own property (wrong type, not one of the options) is skipped
    rather than sent, since the server would refuse the whole answer. ``content`` is not modified.
    """
    filled: dict[str, Any] = dict(content) if content is not None else {}
    properties = requested_schema.get("properties")
    if not isinstance(properties, Mapping):
        return filled
    for name, prop in properties.items():
        if name in filled or not isinstance(prop, Mapping) or "default" not in prop:
            continue
        default = prop["default"]
        problems = validate(default, prop)
        if problems:
            logger.debug("elicitation property %r: ignoring a default that does not fit it: %s", name, problems[0])
            continue
        filled[name] = copy.deepcopy(default)
    return filled
