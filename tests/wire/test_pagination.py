"""Opaque, tamper-evident cursors and the page slicing the MCP ``*/list`` methods use."""

from __future__ import annotations

import base64
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._pagination import MAX_CURSOR_LENGTH, CursorCodec, InvalidCursor, paginate

SECRET = b"0123456789abcdef0123456789abcdef"
URL_SAFE = set(string.ascii_letters + string.digits + "-_")


@pytest.fixture
def codec() -> CursorCodec:
    return CursorCodec(SECRET)


def test_round_trip_and_url_safe(codec: CursorCodec) -> None:
    for offset in (0, 1, 50, 2**31, 2**63 - 1):
        cursor = codec.encode(offset, scope="tools/list")
        assert set(cursor) <= URL_SAFE
        assert len(cursor) <= MAX_CURSOR_LENGTH
        assert codec.decode(cursor, scope="tools/list") == offset


def test_cursor_is_opaque(codec: CursorCodec) -> None:
    cursor = codec.encode(7, scope="tools/list")
    assert "7" not in cursor and "tools" not in cursor
    assert codec.encode(7, scope="tools/list") == cursor  # deterministic for one secret
    assert codec.encode(7, scope="prompts/list") != cursor
    assert CursorCodec(b"another secret, 16+ bytes").encode(7, scope="tools/list") != cursor


def test_wrong_scope_is_rejected(codec: CursorCodec) -> None:
    cursor = codec.encode(10, scope="tools/list")
    for scope in ("prompts/list", "resources/list", "resources/templates/list", "tools/lis", ""):
        with pytest.raises(InvalidCursor):
            codec.decode(cursor, scope=scope)


def test_other_secret_is_rejected(codec: CursorCodec) -> None:
    cursor = codec.encode(10, scope="tools/list")
    with pytest.raises(InvalidCursor):
        CursorCodec(b"a different secret entirely").decode(cursor, scope="tools/list")


def test_default_secret_is_random_per_process_and_shared() -> None:
    a, b = CursorCodec(), CursorCodec()
    cursor = a.encode(3, scope="tools/list")
    assert b.decode(cursor, scope="tools/list") == 3
    with pytest.raises(InvalidCursor):
        CursorCodec(SECRET).decode(cursor, scope="tools/list")
    assert "secret" in repr(a) and SECRET.hex() not in repr(CursorCodec(SECRET))


def _flip(cursor: str, index: int) -> str:
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[index] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()


def test_every_tampered_byte_is_rejected(codec: CursorCodec) -> None:
    cursor = codec.encode(20, scope="tools/list")
    length = len(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    for index in range(length):  # version, every offset byte, every tag byte
        with pytest.raises(InvalidCursor):
            codec.decode(_flip(cursor, index), scope="tools/list")


def test_negative_offset_is_rejected_even_when_signed(codec: CursorCodec) -> None:
    forged = codec._pack(-1, "tools/list")  # what a leaked secret could sign
    with pytest.raises(InvalidCursor, match="negative"):
        codec.decode(forged, scope="tools/list")
    with pytest.raises(ValueError):
        codec.encode(-1, scope="tools/list")
    with pytest.raises(ValueError):
        codec.encode(2**63, scope="tools/list")
    with pytest.raises(TypeError):
        codec.encode(True, scope="tools/list")


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "garbage",
        "!!!!",
        "not base64 at all",
        "AAAA",
        "=" * 8,
        "é" * 34,
        "A" * 34,
        "A" * (MAX_CURSOR_LENGTH + 1),
        "x" * 100_000,
        "\x00" * 34,
    ],
)
def test_garbage_is_rejected(codec: CursorCodec, cursor: str) -> None:
    with pytest.raises(InvalidCursor):
        codec.decode(cursor, scope="tools/list")


def test_non_canonical_spellings_are_rejected(codec: CursorCodec) -> None:
    cursor = codec.encode(5, scope="tools/list")
    for variant in (
        cursor + "=",
        cursor + "==",
        " " + cursor,
        cursor + "\n",
        cursor.replace("-", "+").replace("_", "/") + "+/",
    ):
        with pytest.raises(InvalidCursor):
            codec.decode(variant, scope="tools/list")
    # The last character carries unused bits: changing only those must not give a second valid spelling.
    alphabet = string.ascii_uppercase + string.ascii_lowercase + string.digits + "-_"
    last = alphabet.index(cursor[-1])
    for sibling in {alphabet[(last & ~0b1111) | low] for low in range(16)} - {cursor[-1]}:
        with pytest.raises(InvalidCursor):
            codec.decode(cursor[:-1] + sibling, scope="tools/list")


def test_non_string_cursor_is_rejected(codec: CursorCodec) -> None:
    with pytest.raises(InvalidCursor):
        codec.decode(b"abc", scope="tools/list")  # type: ignore[arg-type]
    with pytest.raises(InvalidCursor):
        codec.decode(12, scope="tools/list")  # type: ignore[arg-type]


def test_invalid_cursor_is_a_value_error() -> None:
    assert issubclass(InvalidCursor, ValueError)


def test_secret_validation() -> None:
    with pytest.raises(ValueError):
        CursorCodec(b"short")
    with pytest.raises(TypeError):
        CursorCodec("a string secret, long enough")  # type: ignore[arg-type]


@settings(max_examples=300)
@given(st.text(max_size=80))
def test_random_strings_never_decode(text: str) -> None:
    codec = CursorCodec(SECRET)
    with pytest.raises(InvalidCursor):
        codec.decode(text, scope="tools/list")


@settings(max_examples=200)
@given(st.integers(0, 2**63 - 1), st.text(max_size=40))
def test_round_trip_property(offset: int, scope: str) -> None:
    codec = CursorCodec(SECRET)
    assert codec.decode(codec.encode(offset, scope=scope), scope=scope) == offset


# ---------------------------------------------------------------------------------------------------------
# paginate
# ---------------------------------------------------------------------------------------------------------


def test_paginate_walks_every_item_once(codec: CursorCodec) -> None:
    items = list(range(23))
    seen: list[int] = []
    cursor: str | None = None
    pages = 0
    while True:
        page, cursor = paginate(items, cursor, page_size=5, scope="tools/list", codec=codec)
        seen.extend(page)
        pages += 1
        if cursor is None:
            break
    assert seen == items
    assert pages == 5


def test_paginate_exact_multiple_has_no_trailing_empty_page(codec: CursorCodec) -> None:
    page, cursor = paginate(list(range(10)), None, page_size=5, scope="s", codec=codec)
    assert page == [0, 1, 2, 3, 4] and cursor is not None
    page, cursor = paginate(list(range(10)), cursor, page_size=5, scope="s", codec=codec)
    assert page == [5, 6, 7, 8, 9] and cursor is None


def test_paginate_empty_and_single_page(codec: CursorCodec) -> None:
    assert paginate([], None, page_size=3, scope="s", codec=codec) == ([], None)
    assert paginate(("a", "b"), None, page_size=3, scope="s", codec=codec) == (["a", "b"], None)


def test_paginate_list_shrank(codec: CursorCodec) -> None:
    _, cursor = paginate(list(range(10)), None, page_size=8, scope="s", codec=codec)
    assert cursor is not None
    assert paginate(list(range(3)), cursor, page_size=8, scope="s", codec=codec) == ([], None)
    assert paginate(list(range(8)), cursor, page_size=8, scope="s", codec=codec) == ([], None)
    assert paginate(list(range(9)), cursor, page_size=8, scope="s", codec=codec) == ([8], None)


@pytest.mark.parametrize("page_size", [0, -1])
def test_paginate_rejects_bad_page_size(codec: CursorCodec, page_size: int) -> None:
    with pytest.raises(ValueError):
        paginate([1], None, page_size=page_size, scope="s", codec=codec)


def test_paginate_rejects_foreign_cursor(codec: CursorCodec) -> None:
    _, cursor = paginate(list(range(10)), None, page_size=2, scope="tools/list", codec=codec)
    assert cursor is not None
    with pytest.raises(InvalidCursor):
        paginate(list(range(10)), cursor, page_size=2, scope="prompts/list", codec=codec)
    with pytest.raises(InvalidCursor):
        paginate(list(range(10)), "bogus", page_size=2, scope="tools/list", codec=codec)


@settings(max_examples=200)
@given(st.lists(st.integers(), max_size=60), st.integers(1, 15))
def test_paginate_property(items: list[int], page_size: int) -> None:
    codec = CursorCodec(SECRET)
    collected: list[int] = []
    cursor: str | None = None
    for _ in range(len(items) + 2):
        page, cursor = paginate(items, cursor, page_size=page_size, scope="s", codec=codec)
        assert len(page) <= page_size
        assert page or not items  # no empty pages while items remain
        collected.extend(page)
        if cursor is None:
            break
    assert cursor is None
    assert collected == items
