"""Small helpers shared by the public entry points."""

from __future__ import annotations

import logging
import sys
from typing import TypeVar

import trio

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = ["Sentinel", "collapse_exception_groups", "first_leaf", "one_exception"]

logger = logging.getLogger("trio_mcp")


E = TypeVar("E", bound=BaseException)


class Sentinel:
    """A unique default value that reads well in ``help()`` (``timeout=DEFAULT``, not ``<object at 0x…>``)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


def first_leaf(error: BaseException, kind: type[E]) -> E | None:
    """The first exception of type ``kind`` in ``error`` or, depth first, in the groups it is made of."""
    if isinstance(error, kind):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = first_leaf(inner, kind)
            if found is not None:
                return found
    return None


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def one_exception(error: BaseException) -> BaseException:
    """The one exception a public call raises for ``error``, which may be a (nested) group.

    Ctrl-C wins (the user asked the program to stop); then the first real failure (the others are logged);
    a group of nothing but cancellations is one ``trio.Cancelled``.
    """
    leaves = _leaves(error)
    for leaf in leaves:
        if isinstance(leaf, KeyboardInterrupt):
            return leaf
    real = [leaf for leaf in leaves if not isinstance(leaf, trio.Cancelled)]
    if not real:
        return leaves[0]
    for other in real[1:]:
        logger.error("another failure at the same time as %r", real[0], exc_info=other)
    return real[0]


class collapse_exception_groups:  # noqa: N801 - used as a function: ``with collapse_exception_groups():``
    """Re-raise an ExceptionGroup escaping a public call as one exception (see ``one_exception``).

    Public ``open_*`` and ``serve_*`` calls own nurseries, and trio wraps even a lone error (or Ctrl-C) in a
    group; callers should see the ``ConnectionClosed``, ``OSError`` or ``KeyboardInterrupt`` itself. A class, not
    a generator: it wraps every stateless HTTP request, and costs nothing unless a group escapes.
    """

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        if isinstance(error, BaseExceptionGroup):
            leaf = one_exception(error)
            raise leaf from leaf.__cause__
