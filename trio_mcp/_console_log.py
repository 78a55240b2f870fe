"""Where trio_mcp's warnings and errors go when the application configured no logging: stderr, while serving.

A library must not configure the root logger, and adds a ``NullHandler`` so that a program that never logs hears
nothing from it. A server is different: a tool that crashes is answered with an error id, and the operator must
be able to look that id up. So while a server is served (``serve_console()``), a handler on the ``trio_mcp``
logger writes WARNING and above to stderr, with the traceback, but only when no other handler would receive the
record: as soon as the application configures logging (``logging.basicConfig()``, a handler on the root or on
``trio_mcp``), records go there alone. Python's own ``logging.lastResort`` works this way, except that it counts
the package's ``NullHandler`` as a handler.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterator

__all__ = ["PACKAGE_HANDLER", "serving_console"]

#: The ``NullHandler`` ``trio_mcp/__init__`` puts on the package logger; it does not count as someone listening.
PACKAGE_HANDLER = logging.NullHandler()


class _ConsoleFallback(logging.Handler):
    """Writes a record to the current ``sys.stderr`` when no other handler, from its logger up, would take it."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if self._heard_elsewhere(record):
            return
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # a logging handler must never raise into the code that logged
            self.handleError(record)

    def _heard_elsewhere(self, record: logging.LogRecord) -> bool:
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None:
            for handler in logger.handlers:
                if handler is not self and handler is not PACKAGE_HANDLER and record.levelno >= handler.level:
                    return True
            logger = logger.parent if logger.propagate else None
        return False


_fallback = _ConsoleFallback()
_lock = threading.Lock()
_serving = 0


@contextlib.contextmanager
def serving_console() -> Iterator[None]:
    """Make trio_mcp's warnings and errors visible on stderr for as long as the block runs (servers nest)."""
    global _serving
    package = logging.getLogger("trio_mcp")
    with _lock:
        _serving += 1
        package.addHandler(_fallback)  # once: a logger keeps one of each handler
    try:
        yield
    finally:
        with _lock:
            _serving -= 1
            if _serving == 0:
                package.removeHandler(_fallback)
