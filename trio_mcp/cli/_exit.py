"""Exit statuses of the ``trio-mcp`` command, the error that carries one up to ``main``, and its one-line news."""

from __future__ import annotations

import sys
from typing import Final

OK: Final = 0
#: The server answered, and the answer was an error (a tool result with ``isError``, or a JSON-RPC error).
TOOL_ERROR: Final = 1
#: The command line was wrong: a bad option, an argument that does not fit the tool's schema, no such target.
USAGE: Final = 2
#: No conversation: the server could not be reached or started, broke the protocol, or timed out.
CONNECTION: Final = 3
#: Interrupted by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED: Final = 130
#: Whoever read our output stopped reading (``trio-mcp ... | head``): 128 + SIGPIPE, quietly, as shells report it.
OUTPUT_CLOSED: Final = 141


class CliError(Exception):
    """A failure the command reports in one line (no traceback) and exits with ``status``."""

    def __init__(self, message: str, status: int = USAGE) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def say(message: str) -> None:
    """One line of news from the command itself (not from a server), on stderr: ``trio-mcp: serving ...``."""
    print(f"trio-mcp: {message}", file=sys.stderr, flush=True)
