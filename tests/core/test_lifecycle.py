"""The handshake machine of the legacy revisions, without I/O: every phase against every event and every
kind of request, both roles, the way h11 tests its state table. The expected tables below are written from the
lifecycle page of the specification (initialize, its answer, then notifications/initialized; ping at any time),
not read from the module."""

from __future__ import annotations

import itertools

import pytest

from trio_mcp._core.lifecycle import HandshakeEvent, Lifecycle, Phase
from trio_mcp.errors import LocalProtocolError, ProtocolError, RemoteProtocolError

NEW, INITIALIZING, INITIALIZED, READY = Phase.NEW, Phase.INITIALIZING, Phase.INITIALIZED, Phase.READY
REQUEST = HandshakeEvent.INITIALIZE_REQUEST
RESULT = HandshakeEvent.INITIALIZE_RESULT
ERROR = HandshakeEvent.INITIALIZE_ERROR
NOTIFIED = HandshakeEvent.INITIALIZED_NOTIFICATION

#: Every (phase, event) the handshake allows, and where it leads; every pair not listed is out of order.
ALLOWED = {
    (NEW, REQUEST): INITIALIZING,
    (INITIALIZING, RESULT): INITIALIZED,
    (INITIALIZING, ERROR): NEW,  # a refused initialize may be tried again
    (INITIALIZED, NOTIFIED): READY,
    (READY, NOTIFIED): READY,  # a repeated notifications/initialized changes nothing
}
ALL_PAIRS = list(itertools.product(Phase, HandshakeEvent))


def machine_in(phase: Phase) -> Lifecycle:
    """A machine brought to ``phase`` through the events a real handshake feeds it."""
    lifecycle = Lifecycle()
    path = {NEW: [], INITIALIZING: [REQUEST], INITIALIZED: [REQUEST, RESULT], READY: [REQUEST, RESULT, NOTIFIED]}
    for event in path[phase]:
        lifecycle.handle(event)
    assert lifecycle.phase is phase
    return lifecycle


def test_a_new_machine_starts_before_the_handshake() -> None:
    assert Lifecycle().phase is NEW


def test_the_table_covers_every_phase_and_event() -> None:
    assert len(ALL_PAIRS) == len(Phase) * len(HandshakeEvent) == 16


@pytest.mark.parametrize(("phase", "event"), [pair for pair in ALL_PAIRS if pair in ALLOWED])
def test_an_allowed_event_moves_to_its_phase(phase: Phase, event: HandshakeEvent) -> None:
    lifecycle = machine_in(phase)
    lifecycle.handle(event)
    assert lifecycle.phase is ALLOWED[phase, event]


@pytest.mark.parametrize(("phase", "event"), [pair for pair in ALL_PAIRS if pair not in ALLOWED])
def test_an_out_of_order_event_is_our_fault_and_changes_nothing(phase: Phase, event: HandshakeEvent) -> None:
    lifecycle = machine_in(phase)
    with pytest.raises(LocalProtocolError) as raised:
        lifecycle.handle(event)
    # Whose fault: this side was asked to do what the protocol forbids, not the peer (h11's convention).
    assert isinstance(raised.value, ProtocolError) and not isinstance(raised.value, RemoteProtocolError)
    # The message names both the event and the phase, so the one line says what went wrong where.
    assert str(raised.value) == f"{event.value} is not allowed in phase {phase.value!r}"
    assert lifecycle.phase is phase


def test_a_refused_initialize_can_be_retried_to_the_end() -> None:
    lifecycle = Lifecycle()
    for event in (REQUEST, ERROR, REQUEST, RESULT, NOTIFIED, NOTIFIED):
        lifecycle.handle(event)
    assert lifecycle.phase is READY


#: Whether the client may send (and the server serve) each kind of request in each phase.
CLIENT_MAY = {
    # initialize: only before the handshake; ping: always; any other request: once initialize is answered.
    "initialize": {NEW},
    "ping": set(Phase),
    "tools/call": {INITIALIZED, READY},
}
#: Whether the server may send (and the client serve) each kind of request in each phase.
SERVER_MAY = {
    "ping": set(Phase),
    "sampling/createMessage": {READY},  # only once the client said it is initialized
    "roots/list": {READY},
}


@pytest.mark.parametrize(("method", "phase"), list(itertools.product(CLIENT_MAY, Phase)))
def test_which_client_requests_each_phase_allows(method: str, phase: Phase) -> None:
    refusal = machine_in(phase).client_request_refusal(method)
    if phase in CLIENT_MAY[method]:
        assert refusal is None
    elif method == "initialize":
        assert refusal == "the session is already initialized"
    else:
        assert refusal == f"{method} received before initialize; the session is not initialized"


@pytest.mark.parametrize(("method", "phase"), list(itertools.product(SERVER_MAY, Phase)))
def test_which_server_requests_each_phase_allows(method: str, phase: Phase) -> None:
    refusal = machine_in(phase).server_request_refusal(method)
    if phase in SERVER_MAY[method]:
        assert refusal is None
    else:
        assert refusal == f"{method} sent before the client finished initialization"


@pytest.mark.parametrize("phase", list(Phase))
def test_asking_changes_no_phase(phase: Phase) -> None:
    lifecycle = machine_in(phase)
    for method in ("initialize", "ping", "tools/call", "sampling/createMessage"):
        lifecycle.client_request_refusal(method)
        lifecycle.server_request_refusal(method)
    assert lifecycle.phase is phase


def test_two_machines_keep_their_own_phase() -> None:
    client, server = Lifecycle(), machine_in(READY)
    client.handle(REQUEST)
    assert (client.phase, server.phase) == (INITIALIZING, READY)
