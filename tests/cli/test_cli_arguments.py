"""``key=value`` words → tool arguments, converted by the input schema (the rules of ``trio-mcp call``)."""

from __future__ import annotations

from typing import Any

import pytest

from trio_mcp.cli._arguments import string_arguments, tool_arguments
from trio_mcp.cli._exit import USAGE, CliError

SCHEMA = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "flag": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object"},
        "maybe": {"type": ["integer", "null"]},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "color": {"enum": ["red", "green"]},
    },
}


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("text=42", {"text": "42"}),
        ("text=", {"text": ""}),
        ("text=a=b", {"text": "a=b"}),
        ("text=[1]", {"text": "[1]"}),
        ("count=3", {"count": 3}),
        ("ratio=3", {"ratio": 3}),
        ("ratio=2.5", {"ratio": 2.5}),
        ("flag=yes", {"flag": True}),
        ("flag=OFF", {"flag": False}),
        ('tags=["a","b"]', {"tags": ["a", "b"]}),
        ('opts={"k": 1}', {"opts": {"k": 1}}),
        ("maybe=null", {"maybe": None}),
        ("maybe=7", {"maybe": 7}),
        ("either=7", {"either": 7}),
        ("either=seven", {"either": "seven"}),
        ("color=red", {"color": "red"}),
        ("unknown=5", {"unknown": 5}),
        ("unknown=five", {"unknown": "five"}),
        ('{"count": 1, "text": "x"}', {"count": 1, "text": "x"}),
    ],
)
def test_conversion(word: str, expected: dict[str, Any]) -> None:
    assert tool_arguments([word], SCHEMA) == expected


def test_later_words_override_a_json_object() -> None:
    assert tool_arguments(['{"count": 1, "text": "x"}', "count=2"], SCHEMA) == {"count": 2, "text": "x"}


@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("count=3.5", "count=3.5: expected an integer"),
        ("ratio=lots", "ratio=lots: expected a number"),
        ("flag=maybe", "expected a boolean"),
        ("tags=a,b", "tags=a,b: expected JSON (array)"),
        ("novalue", "expected key=value"),
        ("=5", "expected key=value"),
        ("{not json", "not valid JSON"),
    ],
)
def test_refusals_are_usage_errors(word: str, message: str) -> None:
    with pytest.raises(CliError) as caught:
        tool_arguments([word], SCHEMA)
    assert caught.value.status == USAGE
    assert message in caught.value.message


def test_prompt_arguments_are_strings() -> None:
    assert string_arguments(["n=3", '{"a": "b"}']) == {"n": "3", "a": "b"}
    with pytest.raises(CliError, match="every value of the JSON object must be a string"):
        string_arguments(['{"a": 1}'])
