"""Custom methods and extensions: requests and notifications no MCP revision defines, served like built-in ones.

An extension (2026-07-28, SEP-2133) is declared under ``capabilities.extensions`` by an identifier such as
``com.example/weather`` mapping to its settings object; its methods are ordinary JSON-RPC methods. Both sides keep
the same small table: a handler per method, checked when it is registered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ._middleware import require_async
from ._wire.methods import METHODS, TASKS_EXTENSION_METHODS

__all__ = ["CustomMethods", "check_extensions", "custom_result"]

Handler = Callable[..., Awaitable[Any]]


def _check_method(method: object) -> str:
    if not isinstance(method, str) or not method:
        raise TypeError(f"method must be a non-empty str, not {method!r}")
    if method in METHODS or method in TASKS_EXTENSION_METHODS:
        raise ValueError(f"{method!r} is an MCP method: its handler is built in, and cannot be replaced")
    return method


def check_extensions(name: str, extensions: object) -> dict[str, dict[str, Any]]:
    """``extensions`` as the capability declares it: identifiers (non-empty strings) to settings objects."""
    if not isinstance(extensions, Mapping):
        raise TypeError(f"{name} must map extension identifiers to settings dicts, not {type(extensions).__name__}")
    checked: dict[str, dict[str, Any]] = {}
    for identifier, settings in extensions.items():
        if not isinstance(identifier, str) or not identifier:
            raise TypeError(f"{name}: an extension identifier must be a non-empty str, not {identifier!r}")
        if settings is not None and not isinstance(settings, Mapping):
            raise TypeError(f"{name}[{identifier!r}] must be a dict of settings or None, not {settings!r}")
        checked[identifier] = dict(settings or {})
    return checked


def custom_result(method: str, result: object) -> dict[str, Any]:
    """What a custom request handler returned, as the JSON-RPC result: a dict, or {} for None."""
    if result is None:
        return {}
    if type(result) is not dict:
        raise TypeError(f"the handler for {method} returned {type(result).__name__}, not a dict")
    return result


class CustomMethods:
    """Handlers for custom request and notification methods, and the extensions declared beside them."""

    __slots__ = ("requests", "notifications", "extensions")

    def __init__(self) -> None:
        self.requests: dict[str, Handler] = {}
        self.notifications: dict[str, Handler] = {}
        self.extensions: dict[str, dict[str, Any]] = {}

    def add_request(self, method: str, handler: Handler) -> None:
        require_async(f"the handler for {_check_method(method)!r}", handler)
        self.requests[method] = handler

    def add_notification(self, method: str, handler: Handler) -> None:
        require_async(f"the handler for {_check_method(method)!r}", handler)
        self.notifications[method] = handler

    def add_extensions(self, name: str, extensions: object) -> None:
        self.extensions.update(check_extensions(name, extensions))

    def declared(self, capabilities: dict[str, Any]) -> dict[str, Any]:
        """``capabilities`` with the declared extensions merged into its ``extensions`` entry."""
        if self.extensions:
            capabilities["extensions"] = {**(capabilities.get("extensions") or {}), **self.extensions}
        return capabilities
