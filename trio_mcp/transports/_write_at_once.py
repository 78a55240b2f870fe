"""A write that does not wait: what a nonblocking pipe or socket takes at once, with no cancel scope and no pass
through trio's scheduler. The caller sends the rest (or learns what went wrong) through trio as usual."""

from __future__ import annotations

import os

__all__ = ["write_at_once"]


def write_at_once(fd: int, data: bytes) -> int:
    """How much of ``data`` the descriptor took without waiting: 0 for a closed one (-1), a full buffer or an
    error, which the caller's ordinary write then waits for or reports."""
    if fd < 0:
        return 0
    try:
        return os.write(fd, data)
    except OSError:
        return 0
