"""The params of ``tools/call``: apart from the other tool types because a 2026-07-28 retry carries input responses,
which can be sampling results, and a sampling request can carry tools."""

from typing import Any

import attrs

from ._base import RequestParams, TaskMetadata
from .mrtr import InputResponses

__all__ = ["CallToolRequestParams"]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CallToolRequestParams(RequestParams):
    """Params of ``tools/call``.

    ``task`` asks for a task (2025-11-25 core tasks); ``input_responses``/``request_state`` carry a 2026-07-28 retry.
    """

    name: str
    arguments: dict[str, Any] | None = None
    task: TaskMetadata | None = None
    input_responses: InputResponses | None = None
    request_state: str | None = None
