"""The ``initialize`` handshake of the legacy revisions (2024-11-05 .. 2025-11-25), as a table.

Both peers run the same machine and feed it the same four events (the client when it sends, the server
when it receives), so one table states the rules for both roles, as h11's ``_state.py`` does.
"""

from __future__ import annotations

import enum
from typing import Final

from ..errors import LocalProtocolError

__all__ = ["HandshakeEvent", "Lifecycle", "Phase"]


class Phase(enum.Enum):
    """Where a connection is in the handshake."""

    NEW = "new"  # nothing exchanged yet
    INITIALIZING = "initializing"  # initialize sent, no answer yet
    INITIALIZED = "initialized"  # initialize answered; notifications/initialized not yet seen
    READY = "ready"  # normal operation

    __hash__ = object.__hash__  # a singleton: by identity, not its name in Python (checked on every request)


class HandshakeEvent(enum.Enum):
    """The messages that move the handshake forward."""

    INITIALIZE_REQUEST = "initialize request"
    INITIALIZE_RESULT = "initialize result"
    INITIALIZE_ERROR = "initialize error"
    INITIALIZED_NOTIFICATION = "initialized notification"


_TRANSITIONS: Final[dict[tuple[Phase, HandshakeEvent], Phase]] = {
    (Phase.NEW, HandshakeEvent.INITIALIZE_REQUEST): Phase.INITIALIZING,
    (Phase.INITIALIZING, HandshakeEvent.INITIALIZE_RESULT): Phase.INITIALIZED,
    (Phase.INITIALIZING, HandshakeEvent.INITIALIZE_ERROR): Phase.NEW,
    (Phase.INITIALIZED, HandshakeEvent.INITIALIZED_NOTIFICATION): Phase.READY,
    # A client may send notifications/initialized again; it changes nothing.
    (Phase.READY, HandshakeEvent.INITIALIZED_NOTIFICATION): Phase.READY,
}

#: Requests either side may send at any phase.
_ALWAYS_ALLOWED: Final = frozenset({"ping"})

#: Phases in which the client may send any request: once the server has answered initialize.
_CLIENT_REQUESTS_ALLOWED: Final = frozenset({Phase.INITIALIZED, Phase.READY})
#: Phases in which the server may send any request: once the client said it is initialized.
_SERVER_REQUESTS_ALLOWED: Final = frozenset({Phase.READY})


class Lifecycle:
    """Tracks one connection's handshake and says which requests are allowed now."""

    __slots__ = ("phase",)

    def __init__(self, phase: Phase = Phase.NEW) -> None:
        self.phase = phase

    def handle(self, event: HandshakeEvent) -> None:
        """Advance on ``event``; raises ``LocalProtocolError`` naming the phase when it is out of order."""
        try:
            self.phase = _TRANSITIONS[self.phase, event]
        except KeyError:
            raise LocalProtocolError(f"{event.value} is not allowed in phase {self.phase.value!r}") from None

    def client_request_refusal(self, method: str) -> str | None:
        """Why the client may not send (or the server may not serve) ``method`` now, or None if it may."""
        if method != "initialize":
            if self.phase in _CLIENT_REQUESTS_ALLOWED or method in _ALWAYS_ALLOWED:
                return None
            return f"{method} received before initialize; the session is not initialized"
        return None if self.phase is Phase.NEW else "the session is already initialized"

    def past_initialize(self) -> bool:
        """Whether ``initialize`` was answered: from then on for good, the client may send every request but it."""
        return self.phase in _CLIENT_REQUESTS_ALLOWED

    def server_request_refusal(self, method: str) -> str | None:
        """Why the server may not send (or the client may not serve) ``method`` now, or None if it may."""
        if method in _ALWAYS_ALLOWED or self.phase in _SERVER_REQUESTS_ALLOWED:
            return None
        return f"{method} sent before the client finished initialization"
