"""The options every ``Client`` takes, as one typed dictionary, and the one check they all go through.

Every ``open_*``/``connect_*`` function takes them as keyword arguments (``**options: Unpack[ClientOptions]``,
so a type checker catches a misspelt name) and checks them before it starts anything: a bad option is a
``TypeError`` or ``ValueError`` that names it, raised at the call, never from inside a task.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, TypedDict

from .._custom import CustomMethods, check_extensions
from .._middleware import Middleware, require_async
from .._wire.versions import LEGACY_VERSIONS, MODERN_VERSIONS
from ..types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    Implementation,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    Root,
)

__all__ = [
    "DEFAULT_TIMEOUT",
    "ClientOptions",
    "ElicitationHandler",
    "ProgressHandler",
    "RootsHandler",
    "SamplingHandler",
    "check_client_options",
    "check_timeout",
]

RootsHandler = Callable[[], Awaitable[Sequence[Root]]]
"""Answers the server's ``roots/list``: returns the roots the server may work in."""

SamplingHandler = Callable[[CreateMessageRequestParams], Awaitable[CreateMessageResult]]
"""Answers ``sampling/createMessage``: runs the host's model on the server's messages."""

ElicitationHandler = Callable[[ElicitRequestParams], Awaitable[ElicitResult]]
"""Answers ``elicitation/create``: asks the user and returns accept (with content), decline or cancel."""

ProgressHandler = Callable[[ProgressNotificationParams], Any]
"""Receives each progress update for a call; may be sync or async, and its exceptions are logged, not raised."""


class ClientOptions(TypedDict, total=False):
    """Keyword options of ``Client`` (see its docstring for what each does)."""

    client_info: Implementation | None
    protocol_version: str
    probe_timeout: float
    request_timeout: float | None
    roots: RootsHandler | None
    sampling: SamplingHandler | None
    sampling_tools: bool
    elicitation: ElicitationHandler | None
    elicitation_url: bool
    on_log: Callable[[LoggingMessageNotificationParams], Any] | None
    on_resource_updated: Callable[[str], Any] | None
    on_list_changed: Callable[[str], Any] | None
    max_pages: int
    host_tasks: bool
    extensions: Mapping[str, Mapping[str, Any] | None]
    request_handlers: Mapping[str, Callable[..., Awaitable[Any]]]
    notification_handlers: Mapping[str, Callable[..., Awaitable[Any]]]
    middleware: Sequence[Middleware]
    outbound_middleware: Sequence[Middleware]


PROTOCOL_VERSIONS: Final = ("auto",) + LEGACY_VERSIONS + MODERN_VERSIONS


class _DefaultTimeout:
    """The ``timeout`` default of calls: the client's ``request_timeout``."""

    def __repr__(self) -> str:
        return "<the client's request_timeout>"


DEFAULT_TIMEOUT: Final[Any] = _DefaultTimeout()


def is_async_callable(value: object) -> bool:
    """True for an ``async def`` function, a bound method or partial of one, or an object with ``async __call__``."""
    while isinstance(value, functools.partial):
        value = value.func
    return inspect.iscoroutinefunction(value) or inspect.iscoroutinefunction(getattr(value, "__call__", None))


def check_timeout(name: str, value: object, *, allow_none: bool = True) -> None:
    """A timeout is a number of seconds, zero or more (zero: already expired), or None for no limit."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        accepted = "a number of seconds" + (" or None" if allow_none else "")
        raise TypeError(f"{name} must be {accepted}, not {type(value).__name__}")
    if not value >= 0:
        raise ValueError(f"{name} must be a number of seconds, zero or more, not {value!r}")


def _async_handler(name: str, value: object) -> None:
    if value is None:
        return
    if not callable(value):
        raise TypeError(f"{name} must be an async function, not {type(value).__name__}")
    if not is_async_callable(value):
        raise TypeError(f"{name} must be an async function (async def), not the sync callable {value!r}")


def _callback(name: str, value: object) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be a function (sync or async) or None, not {type(value).__name__}")


def _flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {type(value).__name__}")


def _client_info(name: str, value: object) -> None:
    if value is not None and not isinstance(value, Implementation):
        raise TypeError(f"{name} must be a trio_mcp.types.Implementation or None, not {type(value).__name__}")


def _protocol_version(name: str, value: object) -> None:
    if value not in PROTOCOL_VERSIONS:
        raise ValueError(f"{name} must be one of {', '.join(PROTOCOL_VERSIONS)}; got {value!r}")


def _max_pages(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, not {value}")


def _handlers(kind: str) -> Callable[[str, Any], None]:
    def check(name: str, value: object) -> None:
        if not isinstance(value, Mapping):
            raise TypeError(f"{name} must map method names to async functions, not {type(value).__name__}")
        table = CustomMethods()
        add = table.add_request if kind == "request" else table.add_notification
        for method, handler in value.items():
            add(method, handler)

    return check


def _middleware(name: str, value: object) -> None:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of async functions, not {type(value).__name__}")
    for item in value:
        require_async(name, item)  # names the option: middleware or outbound_middleware


_CHECKS: Final[Mapping[str, Callable[[str, Any], object]]] = {
    "client_info": _client_info,
    "protocol_version": _protocol_version,
    "probe_timeout": lambda name, value: check_timeout(name, value, allow_none=False),
    "request_timeout": check_timeout,
    "roots": _async_handler,
    "sampling": _async_handler,
    "sampling_tools": _flag,
    "elicitation": _async_handler,
    "elicitation_url": _flag,
    "on_log": _callback,
    "on_resource_updated": _callback,
    "on_list_changed": _callback,
    "max_pages": _max_pages,
    "host_tasks": _flag,
    "extensions": check_extensions,
    "request_handlers": _handlers("request"),
    "notification_handlers": _handlers("notification"),
    "middleware": _middleware,
    "outbound_middleware": _middleware,
}
assert _CHECKS.keys() == ClientOptions.__annotations__.keys()


def check_client_options(options: Mapping[str, Any]) -> None:
    """Raise ``TypeError``/``ValueError`` naming the first unknown or invalid option."""
    for name, value in options.items():
        check = _CHECKS.get(name)
        if check is None:
            raise TypeError(f"unknown client option {name!r}; the options are: {', '.join(_CHECKS)}")
        check(name, value)
