"""The phases of a session's streams (``_core/session_streams.py``): every step in every phase, against the table,
and whose mistake a step the table has no entry for is."""

from __future__ import annotations

import itertools

import pytest

from trio_mcp._core.inbound import REFUSALS, Refusal
from trio_mcp._core.session_streams import (
    TRANSITIONS,
    ClientMistake,
    ServerMistake,
    Step,
    StreamMachine,
    StreamPhase,
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
    mistake = ClientMistake if (phase, step) == (R, Step.READ) else ServerMistake
    with pytest.raises(mistake):
        stream.check(step)
    with pytest.raises(mistake) as raised:
        stream.step(step)
    assert stream.phase is phase  # a mistake changes nothing
    if mistake is ServerMistake:  # it says which stream, which step and which phase
        assert str(raised.value) == f"stream 's.1': cannot {step.value} while {phase.value}"


def test_the_table_is_the_one_written_out() -> None:
    assert dict(TRANSITIONS) == EXPECTED


def test_a_second_get_while_one_reads_is_the_clients_mistake_refused_with_409() -> None:
    stream = in_phase(R)
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
