"""Error shaping: which exception becomes which wire error, said in one place for the whole server."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Union

from .._failures import shaping
from .._middleware import CallNext, RequestInfo
from ..errors import McpError, ToolError, TrioMcpError

__all__ = ["ErrorShaping", "Shape"]

Shape = Union[int, Callable[[Exception], Union[McpError, ToolError]]]
"""A JSON-RPC error code (the message is the exception's text), or a function making the ``McpError`` (a
JSON-RPC error) or ``ToolError`` (an ``isError`` result, for a tool) from the exception."""


class ErrorShaping:
    """Middleware answering the exceptions of ``shapes``' types as it says, whatever handler raised them:
    a tool, a resource, a prompt, a custom method or another middleware further in.

    ``shapes`` maps an exception type to a ``Shape``; the most specific type of the exception's class wins.
    Other exceptions are answered as without it (-32603 naming an error id, or a tool's ``isError`` result),
    and ``McpError`` and ``ToolError`` are never reshaped. The exception's text reaches the peer for the types
    mapped to a code: map only the types whose text is meant for it.
    """

    def __init__(self, shapes: Mapping[type[Exception], Shape]) -> None:
        for kind, shape in shapes.items():
            if not (isinstance(kind, type) and issubclass(kind, Exception)):
                raise TypeError(f"ErrorShaping maps exception types, not {kind!r}")
            if issubclass(kind, TrioMcpError):
                raise ValueError(f"{kind.__name__} is trio_mcp's own and is never reshaped")
            if not (callable(shape) or (isinstance(shape, int) and not isinstance(shape, bool))):
                raise TypeError(f"the shape of {kind.__name__} must be an error code or a function, not {shape!r}")
        self.shapes: dict[type[Exception], Shape] = dict(shapes)

    def shape(self, exc: BaseException) -> McpError | ToolError | None:
        """What ``exc`` is answered with, or None when it is not one of the types mapped."""
        if not isinstance(exc, Exception) or isinstance(exc, TrioMcpError):
            return None
        for kind in type(exc).__mro__:
            shape = self.shapes.get(kind)
            if shape is not None:
                if isinstance(shape, int):
                    return McpError(shape, str(exc) or type(exc).__name__)
                return shape(exc)
        return None

    async def __call__(self, call: RequestInfo, call_next: CallNext) -> Any:
        token = shaping.set(self.shape)  # a tool's failure is mapped where the tool's handler catches it
        try:
            return await call_next()
        except Exception as exc:
            shaped = self.shape(exc)
            if isinstance(shaped, McpError):
                raise shaped from None
            raise
        finally:
            shaping.reset(token)
