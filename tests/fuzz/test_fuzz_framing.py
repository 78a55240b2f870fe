"""Property tests of the stdio line framer: how the bytes are chunked never changes what comes out, the line cap
holds for every input, and nothing but the documented sentinels, lines and ``OversizedLine`` ever comes back."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._core.framing import END_OF_STREAM, NEED_DATA, LineFramer, OversizedLine

FUZZ = settings(settings.get_profile("trio_mcp_fuzz"))

# Bytes rich in the characters the framer cares about: LF, CR, blanks, and ordinary payload.
_interesting = st.sampled_from([b"\n", b"\r", b"\r\n", b" ", b"\t", b"{}", b"x", b"\n\n", b"\xff", b"\x00"])
streams = st.lists(st.one_of(_interesting, st.binary(max_size=24)), max_size=40).map(b"".join)
caps = st.integers(min_value=1, max_value=32)


def run(data: bytes, cuts: list[int], cap: int, *, drain_between: bool) -> list[bytes | int]:
    """Feed ``data`` cut at ``cuts``; collect every line (bytes) and oversized report (its size, as an int)."""
    framer = LineFramer(cap)
    out: list[bytes | int] = []

    def drain() -> object:
        while True:
            item = framer.next_line()
            if item is NEED_DATA or item is END_OF_STREAM:
                # The cap bounds memory: once the framer asks for more, it holds at most ``cap`` bytes.
                assert framer.buffered <= cap
                return item
            if isinstance(item, OversizedLine):
                assert item.size > cap
                out.append(item.size)
            else:
                assert isinstance(item, bytes), f"unexpected item {item!r}"
                assert b"\n" not in item and 0 < len(item) <= cap and item.strip()
                out.append(item)

    bounds = [0, *sorted({c % (len(data) + 1) for c in cuts}), len(data)]
    for start, end in itertools.pairwise(bounds):
        if end > start:
            framer.receive_data(data[start:end])
            if drain_between:
                assert drain() is NEED_DATA
    framer.receive_data(b"")
    assert drain() is END_OF_STREAM
    assert framer.next_line() is END_OF_STREAM  # stays ended
    return out


def reference(data: bytes, cap: int) -> list[bytes | int]:
    """What the framer must produce, written the obvious way (split on LF, then judge each line)."""
    out: list[bytes | int] = []
    *complete, last = data.split(b"\n")
    for line in complete:
        if len(line) > cap:
            out.append(len(line))
        else:
            line = line[:-1] if line.endswith(b"\r") else line
            if line.strip():
                out.append(line)
    if len(last) > cap:
        out.append(len(last))
    elif last.strip():
        out.append(last.rstrip(b"\r"))
    return out


@FUZZ
@given(data=streams, cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12), cap=caps)
def test_chunking_never_changes_the_result(data: bytes, cuts: list[int], cap: int) -> None:
    whole = run(data, [], cap, drain_between=True)
    assert run(data, cuts, cap, drain_between=True) == whole
    assert run(data, cuts, cap, drain_between=False) == whole
    assert whole == reference(data, cap)


@FUZZ
@given(data=streams, cap=caps)
def test_byte_at_a_time_matches_one_chunk(data: bytes, cap: int) -> None:
    assert run(data, list(range(len(data))), cap, drain_between=True) == run(data, [], cap, drain_between=True)


@FUZZ
@given(
    size=st.integers(min_value=1, max_value=200),
    cap=caps,
    ending=st.sampled_from([b"\n", b"\r\n", b"\r", b""]),
    chunk=st.integers(min_value=1, max_value=50),
)
def test_the_cap_is_enforced_and_the_next_line_survives(size: int, cap: int, ending: bytes, chunk: int) -> None:
    line = b"a" * size + ending
    data = line + b"\n" + b"ok\n" if ending else line
    cuts = list(range(chunk, len(data), chunk))
    out = run(data, cuts, cap, drain_between=True)
    body = size + (1 if ending in (b"\r", b"\r\n") else 0)
    if ending == b"":
        assert out == ([size] if size > cap else [b"a" * size])
        return
    # The appended LF ends the line (turning a lone CR into CRLF); a CR is part of the size the cap sees.
    first, rest = out[0], out[1:]
    assert first == (body if body > cap else b"a" * size)
    assert rest == ([b"ok"] if cap >= 2 else [2])


@FUZZ
@given(cap=st.integers(min_value=-5, max_value=0))
def test_a_nonpositive_cap_is_a_value_error(cap: int) -> None:
    try:
        LineFramer(cap)
    except ValueError as exc:
        assert "max_line_bytes" in str(exc)
    else:
        raise AssertionError("LineFramer accepted a cap below 1")


def test_data_after_end_of_stream_is_a_runtime_error() -> None:
    framer = LineFramer(8)
    framer.receive_data(b"")
    try:
        framer.receive_data(b"late")
    except RuntimeError:
        pass
    else:
        raise AssertionError("receive_data() after EOF was accepted")
