"""The streams of a Streamable HTTP session as a state machine, without I/O: who reads each and whether it is over.

A session has a GET stream and a stream per POST that carries requests. Whether a client's response carries a
stream, and whether anything more may come on it, changes only by the steps of ``TRANSITIONS``, the one table
of what may happen to a stream in which phase (as h11 keeps an HTTP connection's states). A step a phase has no
entry for is a mistake: ``ClientMistake`` when the client made it (its request is refused, the session goes
on), ``ServerMistake`` when the server did (a defect, never the client's doing). The HTTP session
(``transports/http/session.py``) does the writing, the waiting and the storing; the phases are decided here,
and tested on their own (``tests/core/test_session_streams.py``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

from .inbound import Refusal, Rejection
from .jsonrpc import RequestId

__all__ = ["TRANSITIONS", "ClientMistake", "ServerMistake", "Step", "StreamMachine", "StreamPhase"]


class StreamPhase(enum.Enum):
    #: More may come on it; no client reads it now (what comes is kept for the next reader).
    WAITING = "waiting"
    #: More may come on it, and a client's response carries it.
    READ = "read"
    #: Nothing more comes on it; its reader's response is still being ended.
    ENDING = "ending"
    #: Nothing more comes on it, and nobody reads it.
    DONE = "done"


class Step(enum.Enum):
    #: A client's response starts carrying the stream: the POST that opened it, or the session's GET.
    READ = "read"
    #: A GET with ``Last-Event-ID`` takes the stream over, replacing a response whose end the server missed.
    RESUME = "resume"
    #: The response carrying it ended (its last event, the client leaving, the server closing it to be polled).
    LEAVE = "leave"
    #: Nothing more will come on it: its requests all ended (answered or not), or the session did.
    COMPLETE = "complete"


_W, _R, _E, _D = StreamPhase.WAITING, StreamPhase.READ, StreamPhase.ENDING, StreamPhase.DONE

#: What each step makes of each phase; a pair missing here is a mistake (``mistake``).
TRANSITIONS: Final[Mapping[tuple[StreamPhase, Step], StreamPhase]] = {
    (_W, Step.READ): _R,
    (_W, Step.RESUME): _R,
    (_W, Step.COMPLETE): _D,
    (_R, Step.RESUME): _R,
    (_R, Step.LEAVE): _W,
    (_R, Step.COMPLETE): _E,
    (_E, Step.RESUME): _E,
    (_E, Step.LEAVE): _D,
    (_E, Step.COMPLETE): _E,
    # An answered stream is read for what it kept: the answers of a JSON-body POST, or a resumption's replay.
    (_D, Step.READ): _E,
    (_D, Step.RESUME): _E,
    (_D, Step.COMPLETE): _D,
}


class ServerMistake(RuntimeError):
    """The server took a step its stream's phase does not allow: a defect of the server, not the client's."""


class ClientMistake(Exception):
    """The client asked for what its session's streams do not allow now; ``rejection`` is how it is refused."""

    def __init__(self, rejection: Rejection) -> None:
        super().__init__(rejection.detail)
        self.rejection = rejection


def mistake(phase: StreamPhase, step: Step, stream_id: str) -> ClientMistake | ServerMistake:
    """What is wrong with taking ``step`` in ``phase``, and whose mistake it is."""
    if phase is _R and step is Step.READ:  # only a client's second GET reads an open stream afresh
        return ClientMistake(Rejection(Refusal.STREAM_ALREADY_OPEN, "A GET stream is already open for this session"))
    return ServerMistake(f"stream {stream_id!r}: cannot {step.value} while {phase.value}")


class StreamMachine:
    """One stream's phase and what it waits for, changed by ``step`` only; the bookkeeping of a followed stream
    (one another process serves) too. Subclassed by the HTTP session's stream, which adds the I/O."""

    __slots__ = ("collect", "id", "last_id", "origin", "pending", "phase", "replayed", "told")

    def __init__(self, stream_id: str, pending: set[RequestId], *, origin: str | None = None) -> None:
        self.id = stream_id
        self.phase = StreamPhase.WAITING
        #: Request ids whose answers have not been sent yet (POST streams).
        self.pending = pending
        #: Keep the answers for one JSON body (``json_response``) instead of streaming them.
        self.collect = False
        #: The process serving the requests of a stream resumed here from another one (None: this process).
        self.origin = origin
        self.last_id: str | None = None
        #: Ids of the events a resumed stream replayed from the store (the same events may also be routed).
        self.replayed: set[str] = set()
        #: The id of the last event the attached reader got (None before the first one with an id).
        self.told: str | None = None

    @property
    def over(self) -> bool:
        """Whether nothing more comes on the stream."""
        return self.phase is _E or self.phase is _D

    def check(self, step: Step) -> None:
        """Raise the mistake ``step`` would be now, changing nothing."""
        if (self.phase, step) not in TRANSITIONS:
            raise mistake(self.phase, step, self.id)

    def step(self, step: Step) -> StreamPhase:
        """Take ``step``: the new phase, or the mistake it is (the phase then stays)."""
        phase = TRANSITIONS.get((self.phase, step))
        if phase is None:
            raise mistake(self.phase, step, self.id)
        self.phase = phase
        return phase

    def answered(self, message: Any) -> bool:
        """Count the answers in ``message`` off ``pending``; True when none is left."""
        for item in message if type(message) is list else (message,):
            if type(item) is dict and "method" not in item:
                self.pending.discard(item.get("id"))
        return not self.pending
