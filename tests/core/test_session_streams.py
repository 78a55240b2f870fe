"""A session's streams without I/O (``_core/session_streams.py``): every step in every phase against the table,
whose mistake a step the table has no entry for is, and which stream carries what."""

from __future__ import annotations

import itertools

import pytest

from trio_mcp._core.inbound import REFUSALS, Refusal
from trio_mcp._core.session_streams import (
    MAX_SENT,
    TRANSITIONS,
    ClientMistake,
    ServerMistake,
    SessionStreams,
    Step,
    StreamMachine,
    StreamPhase,
    origin_of,
)

W, R, E, D = StreamPhase.WAITING, StreamPhase.READ, StreamPhase.ENDING, StreamPhase.DONE

#: The table written out again, so that a change to it is a change to this test too.
EXPECTED = {
    (W, Step.READ): R,
    (W, Step.RESUME): R,
    (W, Step.COMPLETE): D,
    (R, Step.RESUME): R,
    (R, Step.LEAVE): W,
    (R, Step.COMPLETE): E,
    (E, Step.RESUME): E,
    (E, Step.LEAVE): D,
    (E, Step.COMPLETE): E,
    (D, Step.READ): E,
    (D, Step.RESUME): E,
    (D, Step.COMPLETE): D,
}


def in_phase(phase: StreamPhase) -> StreamMachine:
    stream = StreamMachine("s.1", {1})
    stream.phase = phase
    return stream


@pytest.mark.parametrize(("phase", "step"), list(itertools.product(StreamPhase, Step)))
def test_every_step_in_every_phase(phase: StreamPhase, step: Step) -> None:
    stream = in_phase(phase)
    expected = EXPECTED.get((phase, step))
    if expected is not None:
        stream.check(step)
        assert stream.step(step) is expected is stream.phase
        assert stream.over is (expected in (E, D))
        return
    mistake = ClientMistake if step is Step.READ and phase in (R, E) else ServerMistake
    with pytest.raises(mistake):
        stream.check(step)
    with pytest.raises(mistake) as raised:
        stream.step(step)
    assert stream.phase is phase  # a mistake changes nothing
    if mistake is ServerMistake:  # it says which stream, which step and which phase
        assert str(raised.value) == f"stream 's.1': cannot {step.value} while {phase.value}"


def test_the_table_is_the_one_written_out() -> None:
    assert dict(TRANSITIONS) == EXPECTED


@pytest.mark.parametrize("phase", [R, E])
def test_a_second_get_while_one_reads_is_the_clients_mistake_refused_with_409(phase: StreamPhase) -> None:
    """Also while the first one's response is ending (the session ended under it)."""
    stream = in_phase(phase)
    with pytest.raises(ClientMistake) as raised:
        stream.step(Step.READ)
    assert raised.value.rejection.refusal is Refusal.STREAM_ALREADY_OPEN
    assert REFUSALS[raised.value.rejection.refusal][0] == 409
    assert str(raised.value) == "A GET stream is already open for this session"


def test_a_post_stream_read_answered_and_left() -> None:
    """The life of a POST's stream: read by its response, answered, its response ended; a resumption after that
    reads what was kept and ends."""
    stream = StreamMachine("7", {1, 2})
    assert stream.phase is W and not stream.over
    stream.step(Step.READ)
    assert not stream.answered({"jsonrpc": "2.0", "id": 1, "result": {}})
    assert not stream.answered({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}})
    assert stream.answered([{"jsonrpc": "2.0", "id": 2, "error": {"code": 1, "message": "x"}}])
    assert [stream.step(step) for step in (Step.COMPLETE, Step.LEAVE, Step.RESUME, Step.LEAVE)] == [E, D, E, D]


def answer(request_id: int) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": request_id, "result": {}}


def test_streams_carry_their_requests_until_each_is_answered_or_ended() -> None:
    book = SessionStreams("", StreamMachine)
    one, two = book.open([1, 2]), book.open([3])
    assert (one.id, two.id, book.standalone.id) == ("1", "2", "0")
    assert book.owner == {1: one, 2: one, 3: two}
    assert not book.release(answer(1), one)  # 2 is still to come
    assert 1 not in book.owner  # what is sent for 1 from now on goes to the GET stream
    assert not book.release(answer(3), one)  # another stream's request: not released by this one
    assert book.end_request(2) is one  # cancelled: the stream carries nothing more
    book.complete(one)
    assert one.phase is D and set(book.streams) == {"0", "2"}
    assert book.end_request(2) is None and book.end_request(99) is None
    assert book.release([answer(3), {"jsonrpc": "2.0", "method": "notifications/message"}], two)
    assert not book.owner


def test_a_roaming_session_names_its_streams_and_sends_elsewhere_what_it_did_not_ask() -> None:
    book = SessionStreams("abc", StreamMachine)
    assert book.open([1]).id == "abc.1" and origin_of("abc.1") == "abc" and origin_of("1") == ""
    book.sending({"jsonrpc": "2.0", "id": "abc-0", "method": "elicitation/create", "params": {}})
    ours, theirs, note = answer("abc-0"), answer("xyz-0"), {"jsonrpc": "2.0", "method": "notifications/initialized"}
    request = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    assert book.split([ours, theirs, note, request]) == ([ours, note, request], [theirs, note])
    assert book.split(ours) == (None, ours)  # answered once: a second answer is not this process's
    assert book.split(request) == (request, None)
    for number in range(MAX_SENT + 1):
        book.sending({"jsonrpc": "2.0", "id": number, "method": "ping"})
    assert len(book.sent) == MAX_SENT and 0 not in book.sent


def test_a_session_no_other_process_serves_keeps_every_message() -> None:
    book = SessionStreams("", StreamMachine)
    book.sending({"jsonrpc": "2.0", "id": 0, "method": "ping"})
    assert not book.sent
    assert book.split([answer(7)]) == ([answer(7)], None)
