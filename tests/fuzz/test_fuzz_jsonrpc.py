"""Property tests of the JSON-RPC classifier: any bytes and any near-valid message become exactly one event (or
the documented -32700/-32600 ``InvalidMessage``), never an exception, and what we build is what we classify."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._core.jsonrpc import (
    ErrorResponse,
    InvalidMessage,
    Notification,
    Request,
    Response,
    UnencodableMessage,
    classify,
    decode,
    encode,
    error_message,
    is_request_id,
    notification_message,
    request_message,
    result_message,
)
from trio_mcp.errors import INVALID_REQUEST, PARSE_ERROR

FUZZ = settings(settings.get_profile("trio_mcp_fuzz"))
EVENTS = (Request, Notification, Response, ErrorResponse, InvalidMessage)

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
# Ids of every JSON type, weighted towards the ones that look valid but are not (bools, floats, big numbers).
ids = st.one_of(
    st.integers(),
    st.text(max_size=6),
    st.booleans(),
    st.floats(allow_nan=False),
    st.none(),
    st.just(10**400),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)
_MISSING = object()
fields = {
    "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0", 2.0, None, "", _MISSING]),
    "id": st.one_of(ids, st.just(_MISSING)),
    "method": st.one_of(
        st.sampled_from(["ping", "tools/call", "notifications/cancelled", "", "rpc.x"]), json_values, st.just(_MISSING)
    ),
    "params": st.one_of(json_values, st.just(_MISSING)),
    "result": st.one_of(json_values, st.just(_MISSING)),
    "error": st.one_of(
        st.fixed_dictionaries({"code": st.integers(), "message": st.text(max_size=5)}), json_values, st.just(_MISSING)
    ),
}
near_valid = st.fixed_dictionaries(fields).map(lambda d: {k: v for k, v in d.items() if v is not _MISSING})


def check_event(event: Any, message: Any) -> None:
    """The invariants every classification keeps, whatever came in."""
    assert type(event) in EVENTS, f"classify returned {event!r}"
    if isinstance(event, InvalidMessage):
        assert event.code in (INVALID_REQUEST, PARSE_ERROR)
        assert isinstance(event.reason, str) and event.reason
        assert event.id is None or is_request_id(event.id)
        encode(error_message(event.id, event.code, event.reason))  # the answer to it can always be written
        return
    assert type(message) is dict and message.get("jsonrpc") == "2.0"
    if isinstance(event, (Request, Response)):
        assert is_request_id(event.id) and event.id == message["id"]
    if isinstance(event, (Request, Notification)):
        assert type(event.method) is str and (event.params is None or type(event.params) is dict)
        assert ("id" in message) == isinstance(event, Request)
    if isinstance(event, ErrorResponse):
        assert event.id is None or is_request_id(event.id)
        assert "result" not in message


@FUZZ
@given(data=st.binary(max_size=64))
def test_random_bytes_decode_or_give_a_parse_error(data: bytes) -> None:
    value = decode(data)
    if isinstance(value, InvalidMessage):
        assert value.code == PARSE_ERROR and value.id is None
    else:
        check_event(classify(value), value)


@FUZZ
@given(message=near_valid)
def test_near_valid_messages_always_classify(message: dict[str, Any]) -> None:
    check_event(classify(message), message)
    # The same message through the wire codec: encode may refuse only what JSON cannot carry.
    try:
        data = json.dumps(message).encode()
    except ValueError:
        return
    value = decode(data)
    event = classify(value) if not isinstance(value, InvalidMessage) else value
    assert type(event) in EVENTS


@FUZZ
@given(batch=st.lists(st.one_of(near_valid, json_values), max_size=5))
def test_every_member_of_a_batch_classifies(batch: list[Any]) -> None:
    assert isinstance(classify(batch), InvalidMessage)  # a batch is never one message
    for member in batch:
        check_event(classify(member), member)


@FUZZ
@given(value=json_values)
def test_any_json_value_classifies(value: Any) -> None:
    check_event(classify(value), value)


@FUZZ
@given(
    id=st.one_of(st.integers(min_value=-(10**300), max_value=10**300), st.text(max_size=10)),
    method=st.text(max_size=10),
    params=st.one_of(st.none(), st.dictionaries(st.text(max_size=4), json_values, max_size=3)),
    result=json_values,
)
def test_what_we_build_classifies_as_itself(id: Any, method: str, params: Any, result: Any) -> None:
    def through_the_wire(message: Any) -> Any:
        return classify(decode(encode(message)))

    request = through_the_wire(request_message(id, method, params))
    assert type(request) is Request and (request.id, request.method, request.params) == (id, method, params)
    notification = through_the_wire(notification_message(method, params))
    assert type(notification) is Notification and (notification.method, notification.params) == (method, params)
    response = through_the_wire(result_message(id, result))
    assert type(response) is Response and response.id == id and response.result == result
    error = through_the_wire(error_message(id, -32000, method, result))
    assert type(error) is ErrorResponse and error.id == id and error.error["message"] == method


@FUZZ
@given(depth=st.integers(min_value=1, max_value=200_000), opener=st.sampled_from(["[", '{"a":']))
def test_deep_nesting_and_huge_numbers_are_parse_errors_or_values(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    value = decode(opener * depth + "1" + closer * depth)
    assert not isinstance(value, BaseException)
    huge = decode('{"jsonrpc":"2.0","id":' + "9" * (depth % 10_000 + 1) + ',"method":"ping"}')
    if isinstance(huge, InvalidMessage):
        assert huge.code == PARSE_ERROR
    else:
        check_event(classify(huge), huge)


@FUZZ
@given(token=st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1" * 5000]))
def test_non_json_numbers_never_reach_a_handler_unencodable(token: str) -> None:
    """Whatever decode() lets through can be written back: a handler echoing it must not break the session."""
    value = decode('{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + token + "}}")
    if isinstance(value, InvalidMessage):
        assert value.code == PARSE_ERROR
        return
    check_event(classify(value), value)
    assert decode(encode(value)) == value


@FUZZ
@given(value=json_values)
def test_decoded_values_can_always_be_encoded_again(value: Any) -> None:
    data = json.dumps(value).encode()
    assert decode(encode(decode(data))) == value


def standard_decode(text: str) -> Any:
    """What the standard library's decoder makes of ``text``, with the constants JSON lacks refused (as ours)."""

    def refuse(name: str) -> Any:
        raise ValueError(name)

    return json.loads(text, parse_constant=refuse)


@FUZZ
@given(value=json_values, before=st.sampled_from(["", " ", "\t", "\r\n "]), after=st.sampled_from(["", " ", "\r"]))
def test_decode_agrees_with_the_standard_decoder(value: Any, before: str, after: str) -> None:
    """The fast path (the scanner called directly) and the full decoder it falls back to give the same value,
    with or without whitespace around the document."""
    text = before + json.dumps(value) + after
    assert decode(text) == standard_decode(text) == decode(text.encode())


@FUZZ
@given(text=st.text(alphabet='{}[]",:0123456789.eE+-aeflnrstu \\', max_size=24))
def test_decode_refuses_exactly_what_the_standard_decoder_refuses(text: str) -> None:
    try:
        expected = standard_decode(text)
    except (ValueError, RecursionError):
        assert isinstance(decode(text), InvalidMessage)
        return
    got = decode(text)
    if isinstance(got, InvalidMessage):  # only a number too large for a float is refused on top
        assert "out of range" in got.reason
    else:
        assert got == expected


@FUZZ
@given(value=json_values)
def test_encode_writes_what_the_standard_encoder_writes(value: Any) -> None:
    assert encode(value) == json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")


def test_a_message_that_contains_itself_cannot_be_encoded_and_the_next_one_can() -> None:
    loop: list[Any] = [1]
    loop.append({"again": loop})
    with pytest.raises(UnencodableMessage):
        encode(result_message(1, {"content": loop}))
    assert encode(result_message(2, {"content": [1]})) == b'{"jsonrpc":"2.0","id":2,"result":{"content":[1]}}'
