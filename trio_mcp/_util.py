"""Small helpers shared by the public entry points."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator, TypeVar

if sys.version_info < (3, 11):  # pragma: no cover - exercised on 3.10 only
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = ["collapse_exception_groups", "first_leaf"]


E = TypeVar("E", bound=BaseException)


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


def _single_leaf(error: BaseException) -> BaseException | None:
    while isinstance(error, BaseExceptionGroup):
        if len(error.exceptions) != 1:
            return None
        error = error.exceptions[0]
    return error


@contextmanager
def collapse_exception_groups() -> Iterator[None]:
    """Re-raise a nursery's group of exactly one exception as that exception.

    Public ``open_*`` calls own nurseries, and trio wraps even a lone error in an ExceptionGroup; callers
    should see the ``ConnectionClosed`` or their own ``ValueError``, not a group. Several real failures
    stay a group.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaf = _single_leaf(group)
        if leaf is None:
            raise
        raise leaf from leaf.__cause__
