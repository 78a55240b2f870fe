"""The sans-I/O Server-Sent Events encoder and decoder: WHATWG parsing rules, size limits, round trips."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._core.sse import (
    ServerSentEvent,
    SSEDecoder,
    SSEProtocolError,
    encode_comment,
    encode_event,
)


def decode_all(data: bytes, *, chunk: int | None = None, max_event_bytes: int = 1 << 20) -> list[ServerSentEvent]:
    decoder = SSEDecoder(max_event_bytes=max_event_bytes)
    if chunk is None:
        return decoder.receive_data(data)
    events: list[ServerSentEvent] = []
    for i in range(0, len(data), chunk):
        events += decoder.receive_data(data[i : i + chunk])
    return events


def ev(data: str, event: str = "message", id: str = "", retry: int | None = None) -> ServerSentEvent:
    return ServerSentEvent(data=data, event=event, id=id, retry=retry)


# --- encoder ------------------------------------------------------------------------------------------------


def test_encode_simple_event() -> None:
    assert encode_event("hello") == b"data: hello\n\n"


def test_encode_all_fields_and_multiline_data() -> None:
    encoded = encode_event("a\nb\r\nc\rd", event="update", id="42", retry=1500)
    assert encoded == b"id: 42\nevent: update\nretry: 1500\ndata: a\ndata: b\ndata: c\ndata: d\n\n"


def test_encode_empty_data_still_emits_a_data_line() -> None:
    assert encode_event("", id="prime-1") == b"id: prime-1\ndata:\n\n"
    assert decode_all(encode_event("", id="prime-1")) == [ev("", id="prime-1")]


def test_encode_empty_lines_inside_data() -> None:
    assert encode_event("\n") == b"data:\ndata:\n\n"
    assert decode_all(encode_event("\n\nx\n")) == [ev("\n\nx\n")]


def test_encode_keeps_leading_spaces_and_colons() -> None:
    encoded = encode_event("  two spaces: and a colon", event=" spaced", id=" i")
    assert decode_all(encoded) == [ev("  two spaces: and a colon", event=" spaced", id=" i")]


def test_encode_empty_id_resets() -> None:
    assert encode_event("x", id="") == b"id:\ndata: x\n\n"


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\r\n"])
def test_encode_rejects_line_breaks_in_event_and_id(bad: str) -> None:
    with pytest.raises(ValueError, match="CR or LF"):
        encode_event("x", event=bad)
    with pytest.raises(ValueError, match="CR or LF"):
        encode_event("x", id=bad)


def test_encode_rejects_nul_in_id_and_bad_retry() -> None:
    with pytest.raises(ValueError, match="NUL"):
        encode_event("x", id="a\0b")
    with pytest.raises(ValueError, match="retry"):
        encode_event("x", retry=-1)
    with pytest.raises(ValueError, match="retry"):
        encode_event("x", retry=True)
    with pytest.raises(ValueError, match="retry"):
        encode_event("x", retry=1.5)  # type: ignore[arg-type]


def test_encode_rejects_lone_surrogates() -> None:
    with pytest.raises(UnicodeEncodeError):
        encode_event("\ud800")
    with pytest.raises(UnicodeEncodeError):
        encode_event("\ud800", id="1")


def test_encode_an_event_with_an_id_as_a_session_stream_writes_it() -> None:
    """A message's one-line JSON with its store id, and data of several lines with an id, both read back."""
    assert encode_event('{"id":1,"result":{}}', id="s.1_2") == b'id: s.1_2\ndata: {"id":1,"result":{}}\n\n'
    assert decode_all(encode_event("a\nb\rc", id="7")) == [ev("a\nb\nc", id="7")]
    priming = encode_event("", id="s.1_1", retry=1000)  # a stream's first event: an id, a retry hint, no data
    assert priming == b"id: s.1_1\nretry: 1000\ndata:\n\n"
    assert decode_all(priming) == [ev("", id="s.1_1", retry=1000)]
    with pytest.raises(ValueError, match="NUL"):
        encode_event("x\ny", id="a\0b")


def test_encode_unicode() -> None:
    assert encode_event("h\u00e9llo \u2603") == "data: h\u00e9llo \u2603\n\n".encode()
    # Python's str.splitlines() would break on these; SSE must not.
    tricky = "a\x0bb\x0cc\x1cd\x85e\u2028f\u2029g"
    assert decode_all(encode_event(tricky)) == [ev(tricky)]


def test_encode_comment() -> None:
    assert encode_comment() == b":\n"
    assert encode_comment("keep-alive") == b": keep-alive\n"
    assert encode_comment("a\nb") == b": a\n: b\n"
    stream = encode_comment("ping") + encode_event("x") + encode_comment()
    assert decode_all(stream) == [ev("x")]


# --- decoder: the WHATWG rules ---------------------------------------------------------------------------------


def test_spec_example_stock_ticker() -> None:
    stream = b"data: YHOO\ndata: +2\ndata: 10\n\n"
    assert decode_all(stream) == [ev("YHOO\n+2\n10")]


def test_spec_example_comments_and_ids() -> None:
    stream = b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n"
    assert decode_all(stream) == [ev("first event", id="1"), ev("second event"), ev(" third event")]


def test_spec_example_empty_data_and_unterminated() -> None:
    # Two events (the second with empty data); the last block is not dispatched (no blank line before EOF).
    decoder = SSEDecoder()
    events = decoder.receive_data(b"data\n\ndata\ndata\n\ndata:")
    assert events == [ev(""), ev("\n")]
    assert decoder.receive_eof() == []


def test_spec_example_space_after_colon_is_optional() -> None:
    assert decode_all(b"data:test\n\ndata: test\n\n") == [ev("test"), ev("test")]


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_line_endings(eol: bytes) -> None:
    stream = eol.join([b"event: e", b"data: a", b"data: b", b"", b"data: c", b"", b""])
    assert decode_all(stream) == [ev("a\nb", event="e"), ev("c")]
    for chunk in (1, 2, 3):
        assert decode_all(stream, chunk=chunk) == [ev("a\nb", event="e"), ev("c")]


def test_mixed_line_endings() -> None:
    assert decode_all(b"data: a\r\ndata: b\rdata: c\n\r\n") == [ev("a\nb\nc")]


def test_cr_at_chunk_boundary_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.receive_data(b"data: a\r") == []
    # The LF completing the CRLF must not count as a blank line...
    assert decoder.receive_data(b"\ndata: b\r") == []
    # ...but a CR followed by another CR is a blank line, and dispatches at once.
    assert decoder.receive_data(b"\r") == [ev("a\nb")]
    assert decoder.receive_data(b"\ndata: c\n\n") == [ev("c")]


def test_cr_dispatches_without_waiting_for_the_next_byte() -> None:
    decoder = SSEDecoder()
    assert decoder.receive_data(b"data: x\r\r") == [ev("x")]


def test_bom_is_stripped_once() -> None:
    bom = b"\xef\xbb\xbf"
    assert decode_all(bom + b"data: a\n\n") == [ev("a")]
    # A second BOM is part of the first line: the field name becomes "\ufeffdata", which is unknown.
    assert decode_all(bom + bom + b"data: a\n\ndata: b\n\n") == [ev("b")]
    # Byte by byte as well.
    assert decode_all(bom + b"data: a\n\n", chunk=1) == [ev("a")]
    # A BOM in the middle of the stream is data.
    assert decode_all(b"data: a\n\n" + b"data: " + bom + b"b\n\n") == [ev("a"), ev("\ufeffb")]


def test_partial_bom_prefix_that_is_not_a_bom() -> None:
    decoder = SSEDecoder()
    assert decoder.receive_data(b"\xef") == []
    assert decoder.receive_data(b"x\n\ndata: y\n\n") == [ev("y")]


def test_field_without_colon() -> None:
    assert decode_all(b"data\n\n") == [ev("")]
    assert decode_all(b"event\ndata: x\n\n") == [ev("x")]


def test_only_one_leading_space_is_stripped() -> None:
    assert decode_all(b"data:   x  \n\n") == [ev("  x  ")]
    assert decode_all(b"data:\tx\n\n") == [ev("\tx")]


def test_value_with_colons() -> None:
    assert decode_all(b"data: a:b: c\n\n") == [ev("a:b: c")]


def test_comments_and_unknown_fields_are_ignored() -> None:
    stream = b": comment\nfoo: bar\ndata: x\n:another\nData: capitalised is unknown\n\n"
    assert decode_all(stream) == [ev("x")]


def test_blank_line_without_data_dispatches_nothing_and_resets_event_type() -> None:
    assert decode_all(b"event: e\n\ndata: x\n\n") == [ev("x")]


def test_id_applies_without_data() -> None:
    decoder = SSEDecoder()
    assert decoder.receive_data(b"id: 7\n\n") == []
    assert decoder.last_event_id == "7"
    assert decoder.receive_data(b"data: x\n\n") == [ev("x", id="7")]


def test_id_takes_effect_only_at_the_blank_line() -> None:
    decoder = SSEDecoder()
    decoder.receive_data(b"id: 1\ndata: a\n\nid: 2\n")
    assert decoder.last_event_id == "1"
    assert decoder.receive_eof() == []
    # The pending id of the unterminated block was discarded with it.
    assert decoder.last_event_id == "1"
    assert decoder.receive_data(b"data: b\n\n") == [ev("b", id="1")]


def test_id_persists_and_empty_id_resets() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"
    assert decode_all(stream) == [ev("a", id="1"), ev("b", id="1"), ev("c")]


def test_id_with_nul_is_ignored() -> None:
    assert decode_all(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n") == [ev("a", id="1"), ev("b", id="1")]


def test_retry() -> None:
    assert SSEDecoder().retry is None
    decoder = SSEDecoder()
    assert decoder.receive_data(b"retry: 2500\n\n") == []
    assert decoder.retry == 2500
    assert decoder.receive_data(b"retry: 100\ndata: x\n\ndata: y\n\n") == [ev("x", retry=100), ev("y")]
    assert decoder.retry == 100


@pytest.mark.parametrize("value", [b"", b" 5", b"5 ", b"1.5", b"-1", b"1e3", b"\xd9\xa3", b"\xef\xbc\x93", b"9" * 5000])
def test_retry_must_be_ascii_digits(value: bytes) -> None:
    decoder = SSEDecoder()
    decoder.receive_data(b"retry: 7\n\nretry: " + value + b"\ndata: x\n\n")
    assert decoder.retry == 7


def test_retry_keeps_leading_zeros_meaning() -> None:
    decoder = SSEDecoder()
    decoder.receive_data(b"retry: 0010\n\n")
    assert decoder.retry == 10


def test_invalid_utf8_is_replaced() -> None:
    assert decode_all(b"data: a\xffb\n\n") == [ev("a\ufffdb")]


def test_multibyte_character_split_across_chunks() -> None:
    data = "data: \u2603\u00e9\n\n".encode()
    for chunk in range(1, len(data)):
        assert decode_all(data, chunk=chunk) == [ev("\u2603\u00e9")]


def test_eof_discards_partial_event_and_allows_a_new_stream() -> None:
    decoder = SSEDecoder()
    assert decoder.receive_data(b"id: 3\ndata: a\n\nevent: e\ndata: partial\n") == [ev("a", id="3")]
    assert decoder.receive_data(b"") == []
    assert decoder.last_event_id == "3"
    # The next connection starts clean (the pending "event: e" is gone) but keeps the last event id.
    assert decoder.receive_data(b"\xef\xbb\xbfdata: b\n\n") == [ev("b", id="3")]


def test_eof_after_a_cr_does_not_skip_the_next_streams_lf() -> None:
    decoder = SSEDecoder()
    assert decoder.receive_data(b"data: a\r\r") == [ev("a")]
    decoder.receive_eof()
    # A new stream beginning with LF starts with a blank line (nothing to dispatch), not a CRLF continuation.
    assert decoder.receive_data(b"\ndata: b\n\n") == [ev("b")]


# --- limits --------------------------------------------------------------------------------------------------


def test_oversized_unterminated_line_raises_promptly() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    decoder.receive_data(b"data: " + b"x" * 90)
    with pytest.raises(SSEProtocolError, match="without a line break"):
        decoder.receive_data(b"x" * 20)
    # The decoder stays failed.
    with pytest.raises(SSEProtocolError):
        decoder.receive_data(b"\n\n")
    with pytest.raises(SSEProtocolError):
        decoder.receive_eof()


def test_oversized_complete_line_raises() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    with pytest.raises(SSEProtocolError, match="over the 100-byte limit"):
        decoder.receive_data(b": " + b"x" * 200 + b"\n")


def test_oversized_event_made_of_many_small_lines_raises() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    with pytest.raises(SSEProtocolError, match="more than 100 bytes of data"):
        for _ in range(20):
            decoder.receive_data(b"data: 0123456789\n")


def test_limits_count_per_event_not_per_stream() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    for _ in range(50):
        assert decoder.receive_data(b"data: " + b"y" * 80 + b"\n\n") == [ev("y" * 80)]


def test_many_comments_do_not_accumulate() -> None:
    decoder = SSEDecoder(max_event_bytes=100)
    for _ in range(100):
        assert decoder.receive_data(encode_comment("x" * 50)) == []


def test_exactly_at_the_limit_is_fine() -> None:
    decoder = SSEDecoder(max_event_bytes=10)
    assert decoder.receive_data(b"data:1234\n\n") == [ev("1234")]  # a 9-byte line, 5 bytes of data with its \n
    with pytest.raises(ValueError):
        SSEDecoder(max_event_bytes=0)


def test_error_is_a_value_error_saying_what_the_peer_did() -> None:
    decoder = SSEDecoder(max_event_bytes=8)
    with pytest.raises(ValueError) as info:
        decoder.receive_data(b"data: 123456789")
    assert "server sent" in str(info.value)


# --- round trips ---------------------------------------------------------------------------------------------

_text = st.text(st.characters(codec="utf-8"), max_size=40)
_single_line = st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=20)
_event_args = st.fixed_dictionaries(
    {"data": _text},
    optional={
        "event": _single_line,
        "id": _single_line.filter(lambda s: "\0" not in s),
        "retry": st.integers(0, 10**12),
    },
)


@settings(max_examples=300, deadline=None)
@given(
    events=st.lists(_event_args, max_size=8),
    eol=st.sampled_from(["\n", "\r", "\r\n"]),
    bom=st.booleans(),
    comments=st.booleans(),
    cuts=st.lists(st.integers(0, 2000), max_size=12),
)
def test_round_trip_at_arbitrary_chunk_boundaries(
    events: list[dict[str, object]], eol: str, bom: bool, comments: bool, cuts: list[int]
) -> None:
    stream = b"\xef\xbb\xbf" if bom else b""
    expected: list[ServerSentEvent] = []
    last_id = ""
    for args in events:
        if comments:
            stream += encode_comment("keep-alive")
        stream += encode_event(**args)  # type: ignore[arg-type]
        if args.get("id") is not None:
            last_id = str(args["id"])
        retry = args.get("retry")
        expected.append(
            ServerSentEvent(
                data=re.sub(r"\r\n|\r", "\n", str(args["data"])),
                event=str(args.get("event") or "message"),
                id=last_id,
                retry=retry if isinstance(retry, int) else None,
            )
        )
    stream = stream.replace(b"\n", eol.encode())
    decoder = SSEDecoder()
    got: list[ServerSentEvent] = []
    previous = 0
    for cut in sorted({min(c, len(stream)) for c in cuts}) + [len(stream)]:
        if cut > previous:
            got += decoder.receive_data(stream[previous:cut])
        previous = cut
    assert got == expected
    assert decoder.receive_eof() == []
    assert decoder.last_event_id == last_id


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.lists(st.integers(0, 300), max_size=6))
def test_arbitrary_bytes_never_crash_and_chunking_does_not_matter(data: bytes, cuts: list[int]) -> None:
    whole = SSEDecoder(max_event_bytes=64)
    try:
        expected: list[ServerSentEvent] | None = whole.receive_data(data)
    except SSEProtocolError:
        expected = None
    pieces = SSEDecoder(max_event_bytes=64)
    got: list[ServerSentEvent] | None = []
    previous = 0
    try:
        for cut in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
            if cut > previous:
                got += pieces.receive_data(data[previous:cut])  # type: ignore[operator]
            previous = cut
    except SSEProtocolError:
        got = None
    # Chunking changes neither the events nor whether the limit trips.
    assert got == expected
