"""The session record a session directory keeps: one JSON form, read back the same, and readable across versions
(a record from before records had a version, and one from newer code with fields this code does not know)."""

from __future__ import annotations

import json

import pytest

from trio_mcp._core.session_record import RECORD_VERSION, SessionRecord, SessionState

STATE = SessionState(
    protocol_version="2025-06-18",
    client_info={"name": "roamer", "version": "1", "title": "Rôamer"},
    capabilities={"elicitation": {}, "roots": {"listChanged": True}},
    log_level="debug",
    subscriptions=("note://one", "note://two"),
)


def test_a_record_reads_back_as_it_was_written() -> None:
    record = SessionRecord(caller="c" * 64, state=STATE)
    text = record.dumps()
    assert SessionRecord.loads(text) == SessionRecord.loads(text.encode()) == record
    assert json.loads(text)["version"] == RECORD_VERSION
    assert SessionState.from_json(json.loads(json.dumps(STATE.to_json()))) == STATE


def test_a_record_from_before_versions_reads_with_its_defaults() -> None:
    """The layout a server wrote before records had a version: the same fields, some possibly absent."""
    old = {"principal": "k", "state": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": None}}
    record = SessionRecord.loads(json.dumps(old))
    assert record.version == 0 and record.caller == "k"
    assert record.state == SessionState(protocol_version="2025-03-26")  # server's log level, no subscriptions


def test_a_record_from_newer_code_is_read_for_the_fields_known() -> None:
    newer = json.loads(SessionRecord(caller="k", state=STATE).dumps())
    newer["version"] = RECORD_VERSION + 1
    newer["state"]["somethingNew"] = [1, 2]
    newer["alsoNew"] = True
    record = SessionRecord.loads(json.dumps(newer))
    assert (record.version, record.state) == (RECORD_VERSION + 1, STATE)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        b"\xff\xfe",
        "[]",
        '{"state": {"protocolVersion": "2025-06-18"}}',  # no caller
        '{"principal": "k"}',  # no state
        '{"principal": "k", "state": {"capabilities": {}}}',  # no revision
        '{"principal": "k", "state": {"protocolVersion": "2025-06-18", "subscriptions": "x"}}',
        '{"principal": "k", "state": {"protocolVersion": "2025-06-18", "clientInfo": 3}}',
        '{"version": "2", "principal": "k", "state": {"protocolVersion": "2025-06-18"}}',
        '{"version": true, "principal": "k", "state": {"protocolVersion": "2025-06-18"}}',
    ],
)
def test_an_unreadable_record_is_a_value_error_saying_what_is_wrong(text: str | bytes) -> None:
    with pytest.raises(ValueError, match="session"):
        SessionRecord.loads(text)
