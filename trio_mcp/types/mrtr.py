"""Multi round-trip requests (2026-07-28): a server answers ``tools/call``, ``prompts/get`` or ``resources/read``
with :class:`InputRequiredResult` instead of sending requests of its own; the client gathers the answers and
retries the original request with ``input_responses`` (and ``request_state`` echoed byte for byte).

Input requests are plain ``{method, params}`` objects (no ``jsonrpc``, no ``id``), dispatched on ``method``; an
unknown method is kept as :class:`UnknownInputRequest`. Input responses carry no tag, so the converter tells them
apart by their keys: ``action`` (elicitation), ``roots`` (roots), ``model``/``role``/``content`` (sampling).
"""

from typing import Any, Final, Literal, TypeAlias

import attrs

from ._base import RequestParams, Result, WireType
from .elicitation import ElicitRequestParams, ElicitResult
from .roots import ListRootsResult
from .sampling import CreateMessageRequestParams, CreateMessageResult

__all__ = [
    "INPUT_REQUIRED_METHODS",
    "CreateMessageRequest",
    "ListRootsRequest",
    "ElicitRequest",
    "UnknownInputRequest",
    "InputRequest",
    "InputResponse",
    "InputRequests",
    "InputResponses",
    "InputRequiredResult",
    "InputResponseRequestParams",
    "INPUT_REQUEST_TYPES",
]

#: The requests a 2026-07-28 server may answer with an ``InputRequiredResult``: the method table's
#: ``trio_mcp._wire.methods.INPUT_REQUIRED_METHODS`` (which imports this package, so cannot be imported here),
#: spelled out for the public API; ``tests/wire/test_method_table.py`` checks that the two agree.
INPUT_REQUIRED_METHODS: Final = frozenset({"tools/call", "prompts/get", "resources/read"})


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CreateMessageRequest(WireType):
    """An embedded request for a model completion."""

    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ListRootsRequest(WireType):
    """An embedded request for the client's roots."""

    method: Literal["roots/list"] = "roots/list"
    params: RequestParams | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ElicitRequest(WireType):
    """An embedded request for user input (form or URL mode)."""

    method: Literal["elicitation/create"] = "elicitation/create"
    params: ElicitRequestParams


@attrs.frozen(kw_only=True, eq=False, repr=False)
class UnknownInputRequest(WireType):
    """An embedded request whose ``method`` this library does not know, kept verbatim in ``raw``."""

    raw: dict[str, Any]

    @property
    def method(self) -> Any:
        """The request's ``method`` key, as received."""
        return self.raw.get("method")


#: One embedded input request.
InputRequest: TypeAlias = CreateMessageRequest | ListRootsRequest | ElicitRequest | UnknownInputRequest
#: One answer to an embedded input request.
InputResponse: TypeAlias = CreateMessageResult | ListRootsResult | ElicitResult
#: Server-chosen keys to input requests.
InputRequests: TypeAlias = dict[str, InputRequest]
#: The same keys to the client's answers.
InputResponses: TypeAlias = dict[str, InputResponse]

#: ``method`` -> class, for :data:`InputRequest`.
INPUT_REQUEST_TYPES: dict[str, type[WireType]] = {
    "sampling/createMessage": CreateMessageRequest,
    "roots/list": ListRootsRequest,
    "elicitation/create": ElicitRequest,
}


@attrs.frozen(kw_only=True, eq=False, repr=False)
class InputRequiredResult(Result):
    """The server needs client input before it can complete (``result_type`` ``"input_required"``).

    At least one of the two fields is present; ``request_state`` is opaque to the client.
    """

    input_requests: InputRequests | None = None
    request_state: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class InputResponseRequestParams(RequestParams):
    """The fields a retried request adds; mixed into the params of the three methods that allow input."""

    input_responses: InputResponses | None = None
    request_state: str | None = None
