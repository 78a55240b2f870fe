"""Starting a new session when the server ends ours (Streamable HTTP answers 404 for an unknown session).

The client re-initializes once, restores what it had set up (log level, resource subscriptions, which also
carry its ``listen()`` blocks), and sends the failed request again when that is safe: it never reached the
server, or its method only reads (or sets state to the same value again). Anything else raises
``SessionLost``: the server may have acted on it before the session ended, and only the caller can decide.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from ..errors import ConnectionClosed
from ..transports._base import MessageStream

__all__ = ["SAFE_TO_RETRY", "Reconnect", "SessionLost"]

Reconnect = Callable[[MessageStream], Awaitable["MessageStream | None"]]
"""Given the stream whose session ended, a fresh stream to the same server (None: it did not lose a session)."""

#: Requests that may be sent again on a new session without doing anything twice.
SAFE_TO_RETRY: Final = frozenset(
    {
        "ping",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "prompts/list",
        "prompts/get",
        "completion/complete",
        "logging/setLevel",
    }
)


class SessionLost(ConnectionClosed):
    """The server ended the session while ``method`` was in flight; a new session is ready for later calls,
    but this request was not sent again because doing it twice may not be safe (``tools/call``, say)."""

    def __init__(self, method: str) -> None:
        super().__init__(
            "the server ended the session",
            detail=f"{method} may or may not have run; a new session was started, call again if that is safe",
        )
        self.method = method
