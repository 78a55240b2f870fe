"""The 2026-07-28 request header codec, without I/O: values mirrored into ``Mcp-Name`` / ``Mcp-Param-*``
(plain or the ``=?base64?…?=`` form), the comparison a server makes against the body, and the ``x-mcp-header``
schema rules a tool definition must keep. Expected forms are the ones the Streamable HTTP page of the
specification gives as examples."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trio_mcp._core.mcp_headers import (
    NAMED_METHODS,
    HeaderRuleError,
    decode_header_value,
    encode_header_value,
    header_matches,
    header_paths,
)


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "?="


# -- encoding: the specification's own table, then the edges ------------------------------------------------


@pytest.mark.parametrize(
    ("value", "header"),
    [
        ("us-west1", "us-west1"),  # plain ASCII travels as it is
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),  # non-ASCII
        (" padded ", "=?base64?IHBhZGRlZCA=?="),  # leading and trailing spaces
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),  # a control character
    ],
)
def test_the_specification_examples_encode_as_written(value: str, header: str) -> None:
    assert encode_header_value(value) == header
    assert decode_header_value(header) == value


@pytest.mark.parametrize(
    ("value", "header"),
    [(True, "true"), (False, "false"), (0, "0"), (42, "42"), (-7, "-7"), (2**53 - 1, "9007199254740991")],
)
def test_booleans_and_integers_are_written_as_json_writes_them(value: bool | int, header: str) -> None:
    assert encode_header_value(value) == header


@pytest.mark.parametrize(
    "value",
    [
        "with inner spaces",  # a space inside a value is a legal header character
        "file:///projects/myapp/config.json",  # a resource URI as Mcp-Name carries it
        "a=b?c",
        "~!@#$%^&*()_+{}|:<>",
        "",  # empty stays empty: nothing to protect
    ],
)
def test_visible_ascii_stays_plain(value: str) -> None:
    assert encode_header_value(value) == value
    assert decode_header_value(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "Zürich",  # Latin-1 range
        "😀 emoji",  # outside the BMP
        "tab\tinside",  # a tab is legal in a header but not kept plain by the encoder
        "\x7f",  # DEL
        "trailing\t",
        " ",
        "=?base64?aGk=?=",  # text that already looks like the encoded form must not be read as it
        "us-west1\n",  # a line break at the very end is still a line break (no header injection)
        "0\r\n",
    ],
)
def test_anything_else_takes_the_base64_form_and_comes_back_whole(value: str) -> None:
    header = encode_header_value(value)
    assert header == b64(value)
    assert header.isascii() and header.isprintable()
    assert decode_header_value(header) == value


@given(st.text())
def test_every_string_round_trips_through_a_legal_header_value(value: str) -> None:
    header = encode_header_value(value)
    # What the encoder writes is always a legal RFC 9110 field value with nothing to trim.
    assert all(0x20 <= ord(ch) <= 0x7E for ch in header) and header == header.strip()
    assert decode_header_value(header) == value


# -- decoding: what a server is sent ---------------------------------------------------------------------


def test_optional_white_space_around_a_value_is_not_part_of_it() -> None:
    assert decode_header_value("  us-west1\t") == "us-west1"
    assert decode_header_value(" " + b64("Zürich") + " ") == "Zürich"


@pytest.mark.parametrize("raw", ["a\x00b", "line\nbreak", "cr\rhere", "del\x7f", "esc\x1b[0m"])
def test_control_characters_are_refused(raw: str) -> None:
    with pytest.raises(ValueError, match="control characters"):
        decode_header_value(raw)


@pytest.mark.parametrize(
    "raw",
    [
        "=?base64?not base64!?=",  # characters outside the alphabet
        "=?base64?aGk?=",  # wrong padding
        "=?base64?" + base64.b64encode(b"\xff\xfe").decode() + "?=",  # not UTF-8 once decoded
    ],
)
def test_a_malformed_base64_form_is_refused_with_its_reason(raw: str) -> None:
    with pytest.raises(ValueError, match="malformed base64 header value"):
        decode_header_value(raw)


@pytest.mark.parametrize("raw", ["=?base64?", "?=", "=?base64?=", "=?base64", "base64?aGk=?="])
def test_text_that_only_resembles_the_form_is_plain(raw: str) -> None:
    assert decode_header_value(raw) == raw


def test_an_empty_base64_form_is_the_empty_string() -> None:
    assert decode_header_value("=?base64??=") == ""


# -- matching a header against the body ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("us-west1", "us-west1"),
        (b64("Zürich"), "Zürich"),
        (" us-west1 ", "us-west1"),
        ("true", True),
        ("false", False),
        ("3", 3),
        ("3.0", 3),  # integers compare as numbers, however the client wrote them
        ("3", 3.0),
        ("1e2", 100),
    ],
)
def test_a_header_matches_the_body_value_it_stands_for(raw: str, expected: Any) -> None:
    assert header_matches(raw, expected)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("us-east1", "us-west1"),
        ("US-WEST1", "us-west1"),  # values are compared exactly, not ignoring case
        (b64("Zurich"), "Zürich"),
        ("True", True),  # booleans only in JSON's lower case
        ("1", True),
        ("false", True),
        ("4", 3),
        ("three", 3),
        ("3", "4"),
        ("3", None),  # a null value sends no header, so any header is a mismatch
        ("x", ["x"]),
        ("=?base64?!!?=", "x"),  # an undecodable header matches nothing, rather than raising
        ("a\nb", "a\nb"),  # a raw control character is never a match, even against the same text
    ],
)
def test_a_header_that_does_not_stand_for_the_body_value_does_not_match(raw: str, expected: Any) -> None:
    assert not header_matches(raw, expected)


@given(st.one_of(st.text(), st.booleans(), st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1)))
def test_what_the_client_encodes_the_server_matches(value: str | bool | int) -> None:
    assert header_matches(encode_header_value(value), value)


# -- which methods carry Mcp-Name -------------------------------------------------------------------------


def test_mcp_name_mirrors_the_param_that_names_what_is_called() -> None:
    assert NAMED_METHODS["tools/call"] == "name"
    assert NAMED_METHODS["prompts/get"] == "name"
    assert NAMED_METHODS["resources/read"] == "uri"
    for method in ("initialize", "tools/list", "ping", "notifications/initialized"):
        assert method not in NAMED_METHODS


# -- x-mcp-header rules of a tool's input schema -----------------------------------------------------------


def schema(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def test_annotated_properties_map_header_names_to_their_paths() -> None:
    found = header_paths(
        schema(
            region={"type": "string", "x-mcp-header": "Region"},
            query={"type": "string"},
            options={
                "type": "object",
                "properties": {"dry": {"type": "boolean", "x-mcp-header": "Dry-Run"}},
            },
            count={"type": ["integer", "null"], "x-mcp-header": "Count"},  # null beside the type is allowed
        )
    )
    assert found == {"Region": ("region",), "Dry-Run": ("options", "dry"), "Count": ("count",)}


def test_a_schema_without_annotations_has_no_headers() -> None:
    assert header_paths(schema(query={"type": "string"})) == {}
    assert header_paths({}) == {}


def test_a_property_named_like_the_annotation_is_not_one() -> None:
    found = header_paths(
        schema(**{"x-mcp-header": {"type": "string"}}, plain={"type": "string", "default": {"x-mcp-header": "No"}})
    )
    assert found == {}


@pytest.mark.parametrize(
    ("input_schema", "reason"),
    [
        (schema(a={"type": "string", "x-mcp-header": ""}), "must be a non-empty string"),
        (schema(a={"type": "string", "x-mcp-header": 7}), "must be a non-empty string"),
        (schema(a={"type": "string", "x-mcp-header": "Two Words"}), "not an RFC 9110 token"),
        (schema(a={"type": "string", "x-mcp-header": "Colon:"}), "not an RFC 9110 token"),
        (schema(a={"type": "string", "x-mcp-header": "Région"}), "not an RFC 9110 token"),
        (schema(a={"type": "string", "x-mcp-header": "Region\n"}), "not an RFC 9110 token"),
        (
            schema(a={"type": "string", "x-mcp-header": "Region"}, b={"type": "string", "x-mcp-header": "REGION"}),
            "used twice",
        ),
        (schema(a={"type": "object", "x-mcp-header": "Obj"}), "of type 'object'"),
        (schema(a={"type": "array", "x-mcp-header": "List"}), "of type 'array'"),
        (schema(a={"x-mcp-header": "Untyped"}), "of type None"),
        (schema(a={"type": ["string", "integer"], "x-mcp-header": "Either"}), "only integer, string or boolean"),
        ({"type": "object", "x-mcp-header": "Root"}, "the schema root"),
        (
            {"type": "object", "anyOf": [schema(a={"type": "string", "x-mcp-header": "Hidden"})]},
            "not on a property reachable through 'properties' alone",
        ),
        (
            schema(list={"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}),
            "not on a property reachable",
        ),
        (
            {**schema(), "$defs": {"d": {"type": "string", "x-mcp-header": "Def"}}},
            "not on a property reachable",
        ),
    ],
)
def test_an_annotation_that_breaks_a_rule_is_refused_saying_which(input_schema: dict[str, Any], reason: str) -> None:
    with pytest.raises(HeaderRuleError, match=reason.replace("(", r"\(").replace(")", r"\)")) as raised:
        header_paths(input_schema)
    assert isinstance(raised.value, ValueError)  # an invalid definition is a ValueError, as every bad input is


def test_a_refusal_names_where_the_annotation_is() -> None:
    nested = schema(outer={"type": "object", "properties": {"inner": {"type": "object", "x-mcp-header": "In"}}})
    with pytest.raises(HeaderRuleError, match="x-mcp-header 'In' at outer/inner"):
        header_paths(nested)


def test_a_deep_schema_costs_no_stack() -> None:
    deep: dict[str, Any] = {"type": "string", "x-mcp-header": "Deep"}
    for _ in range(5000):
        deep = schema(next=deep)
    assert header_paths(deep) == {"Deep": ("next",) * 5000}
