"""The streams of a Streamable HTTP session as a state machine, without I/O: who reads each, whether it is over,
and which carries what.

A session has a GET stream and a stream per POST that carries requests (``SessionStreams``: which stream
carries each request's messages, until its answer or its end). Whether a client's response carries a
stream, and whether anything more may come on it, changes only by the steps of ``TRANSITIONS``, the one table
of what may happen to a stream in which phase (as h11 keeps an HTTP connection's states). A step a phase has no
entry for is a mistake: ``ClientMistake`` when the client made it (its request is refused, the session goes
on), ``ServerMistake`` when the server did (a defect, never the client's doing). The HTTP session
(``transports/http/session.py``) does the writing, the waiting and the storing; the phases are decided here,
and tested on their own (``tests/core/test_session_streams.py``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final, Generic, TypeVar

from .inbound import Refusal, Rejection
from .jsonrpc import RequestId, is_request_id

__all__ = [
    "MAX_SENT",
    "TRANSITIONS",
    "ClientMistake",
    "ServerMistake",
    "SessionStreams",
    "Step",
    "StreamMachine",
    "StreamPhase",
    "origin_of",
    "stream_id",
]

#: The most unanswered server requests a roaming session remembers sending.
MAX_SENT: Final = 4096


class StreamPhase(enum.Enum):
    __hash__ = object.__hash__  # a member is itself alone: looked up in ``TRANSITIONS`` without a Python call
    #: More may come on it; no client reads it now (what comes is kept for the next reader).
    WAITING = "waiting"
    #: More may come on it, and a client's response carries it.
    READ = "read"
    #: Nothing more comes on it; its reader's response is still being ended.
    ENDING = "ending"
    #: Nothing more comes on it, and nobody reads it.
    DONE = "done"


class Step(enum.Enum):
    __hash__ = object.__hash__
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
    if step is Step.READ and (phase is _R or phase is _E):  # only a client's second GET reads a read stream afresh
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
        #: Ids of the events a resumed stream replayed from the store (the same events may also be routed); made
        #: with the first one (most streams are never resumed from another process).
        self.replayed: set[str] | None = None
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

    def completed(self) -> None:
        """Nothing more comes on the stream (``Step.COMPLETE``)."""
        self.step(Step.COMPLETE)

    def answered(self, message: Any) -> bool:
        """Count the answers in ``message`` off ``pending``; True when none is left."""
        for item in message if type(message) is list else (message,):
            if type(item) is dict and "method" not in item:
                self.pending.discard(item.get("id"))
        return not self.pending


def stream_id(origin: str, number: int) -> str:
    """The id of a session's ``number``th stream opened by the process ``origin`` (``origin_of`` reads it back)."""
    return f"{origin}.{number}" if origin else str(number)


def origin_of(stream_id: str) -> str:
    """The process that opened a stream (``stream_id``): empty for one of a directory no other process shares."""
    return stream_id.rpartition(".")[0]


S = TypeVar("S", bound=StreamMachine)


class SessionStreams(Generic[S]):
    """A session's open streams and the requests each carries; ``make`` makes a stream (the transport's, with
    its I/O). ``origin`` names this process among those serving the session (empty: no other does): the ids
    of the streams it opens start with it, and the requests it sends the client are remembered, so that a
    client's answer to another process's request is told apart."""

    __slots__ = ("_make", "_next", "origin", "owner", "sent", "standalone", "streams")

    def __init__(self, origin: str, make: Callable[[str, set[RequestId]], S]) -> None:
        self.origin = origin
        self._make = make
        self.standalone = make("0", set())
        #: The open streams by id (a completed one is forgotten: a resumption gets it from the event store).
        self.streams: dict[str, S] = {"0": self.standalone}
        #: The stream carrying each request's messages, until its answer or its end.
        self.owner: dict[RequestId, S] = {}
        #: Ids of the requests this process sent the client and has no answer for yet (roaming only; the oldest
        #: are forgotten past ``MAX_SENT``, as the requests themselves time out).
        self.sent: dict[RequestId, None] = {}
        self._next = 1

    def open(self, request_ids: Collection[RequestId]) -> S:
        """A new stream carrying ``request_ids``."""
        stream = self._make(stream_id(self.origin, self._next), set(request_ids))
        self._next += 1
        self.streams[stream.id] = stream
        for request_id in request_ids:
            self.owner[request_id] = stream
        return stream

    def release(self, message: Any, owner: S) -> bool:
        """``message`` answers requests ``owner`` carries: they leave it before the answer is written (what is
        sent for them afterwards goes to the GET stream). True when ``owner`` then carries nothing more."""
        owners = self.owner
        for item in message if type(message) is list else (message,):
            request_id = item.get("id") if type(item) is dict else None
            # A request id (is_request_id, inline: every answer passes here) the stream carries.
            if (type(request_id) is str or type(request_id) is int) and owners.get(request_id) is owner:
                del owners[request_id]
                owner.pending.discard(request_id)
        if not owners:  # an emptied dict keeps its table until cleared: an idle session holds none
            owners.clear()
        return not owner.pending

    def end_request(self, request_id: RequestId) -> S | None:
        """``request_id`` ended without an answer; its stream, if it now carries nothing more."""
        owner = self.owner.pop(request_id, None)
        if owner is None:
            return None
        owner.pending.discard(request_id)
        if not self.owner:
            self.owner.clear()
        return None if owner.pending else owner

    def complete(self, stream: S) -> None:
        """Nothing more comes on ``stream``; the session forgets it."""
        stream.completed()
        self.streams.pop(stream.id, None)

    def sending(self, message: Any) -> None:
        """Remember a request this process sends the client (roaming only)."""
        if self.origin and type(message) is dict and "method" in message and "id" in message:
            self.sent[message["id"]] = None
            if len(self.sent) > MAX_SENT:
                del self.sent[next(iter(self.sent))]

    def split(self, message: Any) -> tuple[Any, Any]:
        """A client message as what this process serves and what goes to the other processes serving the
        session (none when no other does): answers to requests another process sent go there; notifications go
        to both (``initialized``, a cancellation or progress for something served elsewhere, roots changes);
        requests stay here."""
        if not self.origin:
            return message, None
        here: list[Any] = []
        there: list[Any] = []
        for item in message if type(message) is list else (message,):
            if type(item) is dict and "method" in item:
                here.append(item)
                if "id" not in item:
                    there.append(item)
            elif type(item) is dict and is_request_id(item.get("id")) and item["id"] in self.sent:
                del self.sent[item["id"]]
                here.append(item)
            else:
                there.append(item)
        if type(message) is not list:
            return (here[0] if here else None), (there[0] if there else None)
        return (here or None), (there or None)
