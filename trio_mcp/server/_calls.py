"""Calling user handlers: which parameters are injected, string arguments converted to parameter types, sync
functions run in threads."""

from __future__ import annotations

import functools
import inspect
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from ._blocking import Watch, watched

__all__ = [
    "coerce_strings",
    "invoke",
    "is_async_callable",
    "is_context",
    "refuse_unannotated_context",
    "starter",
]

#: Names people give the context parameter; unannotated, such a parameter is almost surely a forgotten ``: Context``.
_CONTEXT_NAMES = frozenset({"ctx", "context"})


def coerce_strings(schema: Mapping[str, Any], values: Mapping[str, str | list[str]]) -> dict[str, Any]:
    """Convert each string to the JSON type its property in ``schema`` asks for, where it parses.

    A value that does not parse is left as it is, so the strict binding that follows reports it
    precisely ("limit: expected integer, got 'ten'").
    """
    properties = schema.get("properties") or {}
    return {name: _coerce(value, properties.get(name) or {}) for name, value in values.items()}


def _coerce(value: Any, schema: Mapping[str, Any]) -> Any:
    declared = schema.get("type")
    kinds = {declared} if isinstance(declared, str) else set(declared or ())
    if not kinds:
        for option in schema.get("anyOf") or ():
            option_type = option.get("type") if isinstance(option, Mapping) else None
            if isinstance(option_type, str):
                kinds.add(option_type)
    if isinstance(value, list):
        items = schema.get("items")
        return [_coerce(item, items if isinstance(items, Mapping) else {}) for item in value]
    if not isinstance(value, str) or not kinds or "string" in kinds:
        return value
    if "integer" in kinds:
        try:
            return int(value)
        except ValueError:
            pass
    if "number" in kinds:
        try:
            return float(value)
        except ValueError:
            pass
    if "boolean" in kinds and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if "null" in kinds and value == "":
        return None
    return value


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """True for ``async def`` functions, also behind ``functools.partial`` or as a callable object."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


def invoke(
    fn: Callable[..., Any],
    kwargs: dict[str, Any],
    *,
    is_async: bool,
    run_in_thread: bool = True,
    watch: Watch | None = None,
) -> Awaitable[Any]:
    """Call a handler: what to await for its value. An async one is awaited as it is (no coroutine of ours
    around it); a sync one runs in a worker thread, so it never blocks the event loop.

    A thread cannot be interrupted: on cancel the request ends at once and the thread's result is dropped.
    With a ``watch``, what runs on the event loop is timed, and a long hold of it logged (``_blocking``).
    """
    return starter(fn, is_async=is_async, run_in_thread=run_in_thread, watch=watch)(kwargs)


def starter(
    fn: Callable[..., Any], *, is_async: bool, run_in_thread: bool = True, watch: Watch | None = None
) -> Callable[[dict[str, Any]], Awaitable[Any]]:
    """``invoke`` with everything but the arguments decided once (a tool's, when it is registered): what to call
    with each call's keyword arguments."""
    if not is_async:
        return lambda kwargs: _invoke_sync(fn, kwargs, run_in_thread, watch)
    if watch is None:
        return lambda kwargs: fn(**kwargs)
    return functools.partial(watched, watch, fn)


async def _invoke_sync(fn: Callable[..., Any], kwargs: dict[str, Any], run_in_thread: bool, watch: Watch | None) -> Any:
    """A sync handler's call: in a worker thread, or on the event loop (timed) with ``run_in_thread=False``."""
    if not run_in_thread:
        started = time.perf_counter()
        try:
            return fn(**kwargs)
        finally:
            if watch is not None:
                watch.check(started)
    try:
        return await trio.to_thread.run_sync(functools.partial(fn, **kwargs), abandon_on_cancel=True)
    except Exception as exc:
        if "thread" in str(exc).lower():  # sqlite3's "objects created in a thread can only be used in that same..."
            _add_note(exc, _IN_A_WORKER_THREAD)
        raise


#: The cause of a thread-affinity error in a sync handler, which the user did not know ran in a thread.
_IN_A_WORKER_THREAD = (
    "trio_mcp: this sync handler ran in a worker thread, as sync handlers do; an object made in another thread "
    "(an sqlite3 connection opened in the lifespan, say) may not work there: make the handler async, open the "
    "object inside it, or (a tool) register it with run_in_thread=False, which blocks the event loop while it runs"
)


def _add_note(exc: BaseException, note: str) -> None:
    if sys.version_info >= (3, 11):
        exc.add_note(note)
    else:  # pragma: no cover - exercised on 3.10 only (the exceptiongroup backport prints __notes__)
        exc.__notes__ = [*getattr(exc, "__notes__", ()), note]  # type: ignore[attr-defined]


def is_context(annotation: Any) -> bool:
    """Parameters annotated ``Context`` are injected, not arguments the client sends; the class carries the
    ``_trio_mcp_context`` marker, so the definitions need not import it."""
    return isinstance(annotation, type) and getattr(annotation, "_trio_mcp_context", False) is True


def refuse_unannotated_context(fn: Callable[..., Any], what: str) -> None:
    """``def f(x: int, ctx)`` would make ``ctx`` an argument every client must send, and every call fail;
    refuse it at registration, in one line that says what to write."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return  # describing the function reports this
    for param in parameters:
        if param.name in _CONTEXT_NAMES and param.annotation is inspect.Parameter.empty:
            raise TypeError(
                f"{what}: parameter {param.name!r} has no annotation, so clients would have to send it; write "
                f"`{param.name}: Context` to receive the request context (or annotate the argument's type)"
            )
