"""What the client does for the server: the callbacks answering its requests and the capabilities they declare.

A server asks for roots, a model completion (sampling) or user input (elicitation) as a JSON-RPC request in the
legacy era and as an embedded input request of an ``InputRequiredResult`` on 2026-07-28; ``answer`` serves both,
so the checks (was it declared? was the URL mode or sampling with tools declared?) cannot drift apart.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any, Final

import attrs

from .._session import InboundRequest
from .._wire.convert import params_from_wire, to_wire
from .._wire.features import Feature, has
from .._wire.methods import METHODS, declared
from ..errors import INVALID_PARAMS, METHOD_NOT_FOUND, McpError
from ..types import ElicitRequestURLParams
from ._options import ElicitationHandler, RootsHandler, SamplingHandler

__all__ = ["Refused", "ServerRequestHandlers", "report_progress", "serving"]


class Refused(McpError):
    """A server request this client does not serve: its capability (or that mode of it) was not declared."""


@attrs.frozen
class ServerRequestHandlers:
    """The callbacks that answer server requests; registering one declares its capability."""

    roots: RootsHandler | None = None
    sampling: SamplingHandler | None = None
    sampling_tools: bool = False
    elicitation: ElicitationHandler | None = None
    elicitation_url: bool = False

    def capabilities(self, version: str) -> dict[str, Any]:
        """The capabilities to declare speaking ``version``: nothing that cannot be served.

        Sub-capabilities are declared only in the revision that defines them (elicitation from 2025-06-18;
        ``sampling.tools`` and elicitation ``form``/``url`` from 2025-11-25; roots without ``listChanged`` on
        2026-07-28).
        """
        capabilities: dict[str, Any] = {}
        if self.roots is not None:
            tells = METHODS["notifications/roots/list_changed"].sent_by("client", version)
            capabilities["roots"] = {"listChanged": True} if tells else {}
        if self.sampling is not None:
            capabilities["sampling"] = (
                {"tools": {}} if self.sampling_tools and has(version, Feature.SAMPLING_TOOLS) else {}
            )
        if self.elicitation is not None and has(version, Feature.ELICITATION):
            if self.elicitation_url and has(version, Feature.URL_ELICITATION):
                capabilities["elicitation"] = {"form": {}, "url": {}}
            else:
                capabilities["elicitation"] = {}
        return capabilities

    async def answer(self, method: str, params: Any, declared_capabilities: Mapping[str, Any]) -> Any:
        """The wire result for the server's ``method`` request, from the registered callback.

        Raises ``Refused`` for a request outside the ``declared_capabilities`` or with params that do not parse
        (-32602, read as the method table's params type), and whatever the callback raises.
        """
        callback: Any = getattr(self, _CALLBACKS[method]) if method in _CALLBACKS else None
        spec = METHODS[method] if callback is not None else None
        if spec is None or spec.capability is None or not declared(declared_capabilities, spec.capability):
            raise Refused(METHOD_NOT_FOUND, f"Method not found: {method}")
        asked = _parse(params, spec.params_type)
        if method == "roots/list":
            return {"roots": [to_wire(root) for root in await callback()]}
        if method == "sampling/createMessage":
            if (asked.tools is not None or asked.tool_choice is not None) and not declared(
                declared_capabilities, ("sampling", "tools")
            ):
                raise Refused(INVALID_PARAMS, "Invalid params: this client did not declare sampling with tools")
        elif isinstance(asked, ElicitRequestURLParams) and not declared(declared_capabilities, ("elicitation", "url")):
            raise Refused(INVALID_PARAMS, "Invalid params: this client did not declare URL-mode elicitation")
        return to_wire(await callback(asked))


#: The server requests a callback answers, and the attribute that holds it.
_CALLBACKS: Final = {"roots/list": "roots", "sampling/createMessage": "sampling", "elicitation/create": "elicitation"}


def _parse(params: Any, cls: Any) -> Any:
    try:
        return params_from_wire(params, cls)
    except McpError as exc:
        raise Refused(exc.code, exc.message, exc.data) from None


#: The server request (and its protocol version) the current callback task answers, for ``report_progress``.
serving: contextvars.ContextVar[tuple[InboundRequest, str] | None] = contextvars.ContextVar(
    "trio_mcp_client_serving", default=None
)


async def report_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    """From inside a roots, sampling or elicitation callback: tell the server how far along the answer is.

    A no-op unless the server's request carried a ``progressToken``; ``progress`` must increase with each
    call. Outside such a callback it raises ``RuntimeError``.
    """
    current = serving.get()
    if current is None:
        raise RuntimeError("report_progress() only works inside a callback that answers a server request")
    request, version = current
    await request.report_progress(progress, total, message if has(version, Feature.PROGRESS_MESSAGE) else None)
