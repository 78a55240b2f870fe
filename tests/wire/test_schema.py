"""Tests for trio_mcp._schema: type hints -> JSON Schema, argument binding, output dumping, the validator."""

import datetime
import enum
import functools
import importlib
import importlib.util
import json
import math
import sys
import textwrap
import time
import typing
import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NewType, Optional, TypedDict, Union

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trio_mcp._schema import (
    ArgumentError,
    Field,
    FunctionSchema,
    OutputError,
    check_schema_bounded,
    describe_function,
    json_schema_for,
    validate,
)

# -- module-level types (so string annotations resolve) -------------------------------------------------------


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@attrs.frozen
class Point:
    x: int
    y: int = 0


@attrs.define
class Filters:
    """Search filters.

    Attributes:
        tags: Tags that must all match.
    """

    tags: list[str]
    color: Optional[Color] = None
    limit: Annotated[int, Field(minimum=0, description="Max hits")] = 10


@attrs.frozen
class Tree:
    value: int
    children: "tuple[Tree, ...]" = ()


class Item(TypedDict):
    name: str
    qty: int


class _NamedItem(TypedDict):
    name: str


class PartialItem(_NamedItem, total=False):
    note: str


class Node(TypedDict):
    label: str
    next: "Optional[Node]"


@attrs.define
class Positive:
    n: int = attrs.field(validator=attrs.validators.gt(0))


@attrs.define
class Private:
    _secret: str
    computed: int = attrs.field(init=False, default=1)


UserId = NewType("UserId", int)


def _fn(annotation: Any, returns: Any = None) -> Any:
    """A one-parameter function ``f(x: annotation) -> returns`` built at run time."""

    def f(x):  # type: ignore[no-untyped-def]
        return x

    f.__annotations__ = {"x": annotation, "return": annotation if returns is None else returns}
    return f


def schema_of(annotation: Any) -> dict[str, Any]:
    return json_schema_for(annotation)


def bind1(annotation: Any, value: Any) -> Any:
    return describe_function(_fn(annotation)).bind({"x": value})["x"]


def bind_errors(annotation: Any, value: Any) -> list[str]:
    with pytest.raises(ArgumentError) as info:
        describe_function(_fn(annotation)).bind({"x": value})
    return info.value.errors


# -- schema generation -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "schema"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (Optional[int], {"type": ["integer", "null"]}),
        (int | None, {"type": ["integer", "null"]}),
        (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (Union[int, str, None], {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}),
        (Optional[Any], {}),
        (Literal["a"], {"type": "string", "const": "a"}),
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, "a", None], {"type": ["integer", "string", "null"], "enum": [1, "a", None]}),
        (Literal[True], {"type": "boolean", "const": True}),
        (Optional[Literal["a", "b"]], {"type": ["string", "null"], "enum": ["a", "b", None]}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (Optional[Color], {"type": ["string", "null"], "enum": ["red", "green", None]}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (list, {"type": "array"}),
        (typing.List[str], {"type": "array", "items": {"type": "string"}}),
        (Sequence[int], {"type": "array", "items": {"type": "integer"}}),
        (Optional[list[int]], {"type": ["array", "null"], "items": {"type": "integer"}}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": False,
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (tuple[()], {"type": "array", "maxItems": 0}),
        (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        (frozenset[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (dict, {"type": "object"}),
        (Mapping[str, float], {"type": "object", "additionalProperties": {"type": "number"}}),
        (
            dict[Color, int],
            {
                "type": "object",
                "additionalProperties": {"type": "integer"},
                "propertyNames": {"enum": ["red", "green"]},
            },
        ),
        (datetime.datetime, {"type": "string", "format": "date-time"}),
        (datetime.date, {"type": "string", "format": "date"}),
        (datetime.time, {"type": "string", "format": "time"}),
        (uuid.UUID, {"type": "string", "format": "uuid"}),
        (UserId, {"type": "integer"}),
        (
            Annotated[int, Field(description="d", title="T", examples=[1], minimum=0)],
            {"type": "integer", "title": "T", "description": "d", "examples": [1], "minimum": 0},
        ),
        (list[Annotated[str, Field(pattern="^a")]], {"type": "array", "items": {"type": "string", "pattern": "^a"}}),
        (Annotated[Optional[int], Field(description="maybe")], {"type": ["integer", "null"], "description": "maybe"}),
    ],
)
def test_schema_for_simple_types(annotation: Any, schema: dict[str, Any]) -> None:
    assert schema_of(annotation) == schema


def test_schema_attrs_class() -> None:
    assert schema_of(Filters) == {
        "type": "object",
        "description": "Search filters.",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags that must all match."},
            "color": {"type": ["string", "null"], "enum": ["red", "green", None], "default": None},
            "limit": {"type": "integer", "minimum": 0, "description": "Max hits", "default": 10},
        },
        "required": ["tags"],
        "additionalProperties": False,
    }


def test_schema_attrs_private_and_non_init_fields() -> None:
    schema = schema_of(Private)
    assert schema["properties"] == {"secret": {"type": "string"}}
    assert schema["required"] == ["secret"]


def test_schema_attrs_factory_default_is_not_required_and_has_no_default() -> None:
    schema = schema_of(Tree)
    assert schema["required"] == ["value"]
    assert schema["properties"]["children"] == {"type": "array", "items": {"$ref": "#/$defs/Tree"}, "default": []}


def test_schema_recursive_attrs_keeps_def_for_self_reference() -> None:
    schema = schema_of(Optional[Tree])
    assert schema["anyOf"] == [{"$ref": "#/$defs/Tree"}, {"type": "null"}]
    tree = schema["$defs"]["Tree"]
    assert tree["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    top = schema_of(Tree)
    assert top["type"] == "object" and top["$defs"]["Tree"]["type"] == "object"


def test_schema_recursive_typeddict() -> None:
    schema = schema_of(Node)
    assert schema["properties"]["next"] == {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}
    assert schema["required"] == ["label", "next"]
    assert "Node" in schema["$defs"]


def test_schema_typeddict_totality() -> None:
    assert schema_of(Item)["required"] == ["name", "qty"]
    partial = schema_of(PartialItem)
    assert partial["required"] == ["name"]
    assert set(partial["properties"]) == {"name", "note"}
    assert partial["additionalProperties"] is False


def test_schema_typeddict_required_and_not_required() -> None:
    # Python 3.10's typing has no Required/NotRequired: its users take typing_extensions', TypedDict included.
    forms: Any = typing if sys.version_info >= (3, 11) else importlib.import_module("typing_extensions")
    NotRequired, Required = forms.NotRequired, forms.Required
    TD = forms.TypedDict("TD", {"a": int, "b": NotRequired[Annotated[str, Field(description="bee")]]})
    schema = schema_of(TD)
    assert schema["required"] == ["a"]
    assert schema["properties"]["b"] == {"type": "string", "description": "bee"}
    assert bind1(TD, {"a": 1}) == {"a": 1}
    Loose = forms.TypedDict("Loose", {"a": Annotated[Required[int], Field(minimum=1)], "b": str}, total=False)
    schema = schema_of(Loose)
    assert schema["required"] == ["a"]
    assert schema["properties"]["a"] == {"type": "integer", "minimum": 1}
    assert bind_errors(Loose, {"a": 0}) == ["x.a: expected a number >= 1, got 0"]


def test_schema_named_types_go_to_defs_once() -> None:
    schema = schema_of(dict[str, list[Point]])
    assert schema["additionalProperties"]["items"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"] == {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
            "required": ["x"],
            "additionalProperties": False,
        }
    }


def test_schema_def_name_collision() -> None:
    def make() -> Any:
        @attrs.define
        class Point:  # same name as the module-level one
            label: str

        return Point

    schema = schema_of(tuple[Point, make()])
    assert set(schema["$defs"]) == {"Point", "Point2"}
    assert [item["$ref"] for item in schema["prefixItems"]] == ["#/$defs/Point", "#/$defs/Point2"]


def test_schema_annotated_on_named_type_sits_beside_ref() -> None:
    schema = schema_of(list[Annotated[Point, Field(description="a point")]])
    assert schema["items"] == {"$ref": "#/$defs/Point", "description": "a point"}


@pytest.mark.parametrize(
    "annotation",
    [
        bytes,
        dict[int, str],
        dict[Level, str],
        set[list[int]],
        set[Filters],
        complex,
        typing.TypeVar("T"),
        Literal[1.5],
        typing.Callable[[], int],
        Item | bytes,
    ],
)
def test_unsupported_annotations_fail_at_declaration(annotation: Any) -> None:
    with pytest.raises(TypeError) as info:
        describe_function(_fn(annotation, returns=type(None)))
    assert "parameter 'x' of" in str(info.value)


def test_unsupported_annotation_message() -> None:
    def tool(data: bytes) -> None:
        pass

    with pytest.raises(TypeError, match=r"parameter 'data' of .*tool\(\): unsupported type bytes; supported are str"):
        describe_function(tool)


def test_unsupported_attrs_field_names_the_field() -> None:
    @attrs.define
    class Bad:
        blob: bytes

    with pytest.raises(TypeError, match=r"field 'blob' of .*Bad \(used by parameter 'x'"):
        describe_function(_fn(Bad))


def test_enum_with_non_json_values_is_refused() -> None:
    class Weird(enum.Enum):
        A = (1, 2)

    with pytest.raises(TypeError, match="non-JSON value"):
        json_schema_for(Weird)


def test_generic_attrs_class_is_refused() -> None:
    T = typing.TypeVar("T")

    @attrs.define
    class Box(typing.Generic[T]):
        item: T

    with pytest.raises(TypeError, match="generic attrs"):
        json_schema_for(Box[int])


# -- conversion (bind) of every supported type ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("annotation", "value", "expected"),
    [
        (str, "hi", "hi"),
        (int, 5, 5),
        (int, 3.0, 3),  # JSON Schema counts 3.0 as an integer
        (float, 2.5, 2.5),
        (float, 2, 2.0),
        (bool, False, False),
        (None, None, None),
        (Any, {"a": [1]}, {"a": [1]}),
        (Optional[int], None, None),
        (Optional[int], 4, 4),
        (Literal["a", "b"], "b", "b"),
        (Literal[1, True], True, True),
        (Literal[1, True], 1, 1),
        (Color, "green", Color.GREEN),
        (Level, 2, Level.HIGH),
        (list[int], [1, 2], [1, 2]),
        (tuple[int, ...], [1, 2], (1, 2)),
        (tuple[int, str], [1, "a"], (1, "a")),
        (tuple[()], [], ()),
        (set[str], ["a", "b"], {"a", "b"}),
        (frozenset[int], [3], frozenset({3})),
        (dict[str, float], {"a": 1}, {"a": 1.0}),
        (dict[Color, int], {"red": 1}, {Color.RED: 1}),
        (Item, {"name": "n", "qty": 2}, {"name": "n", "qty": 2}),
        (PartialItem, {"name": "n"}, {"name": "n"}),
        (Point, {"x": 1}, Point(1, 0)),
        (Private, {"secret": "s"}, Private("s")),
        (Tree, {"value": 1, "children": [{"value": 2}]}, Tree(1, (Tree(2),))),
        (
            Node,
            {"label": "a", "next": {"label": "b", "next": None}},
            {"label": "a", "next": {"label": "b", "next": None}},
        ),
        (datetime.date, "2024-02-29", datetime.date(2024, 2, 29)),
        (datetime.datetime, "2024-02-29T10:00:00Z", datetime.datetime(2024, 2, 29, 10, tzinfo=datetime.timezone.utc)),
        (datetime.time, "10:30:00", datetime.time(10, 30)),
        (uuid.UUID, "12345678-1234-5678-1234-567812345678", uuid.UUID("12345678-1234-5678-1234-567812345678")),
        (UserId, 7, 7),
        (Annotated[int, Field(minimum=0)], 0, 0),
        (Sequence[int], [1], [1]),
    ],
)
def test_bind_converts(annotation: Any, value: Any, expected: Any) -> None:
    result = bind1(annotation, value)
    assert result == expected
    assert type(result) is type(expected)


def test_bind_union_prefers_exact_type_whatever_the_order() -> None:
    assert type(bind1(Union[int, float], 3)) is int
    assert type(bind1(Union[int, float], 3.5)) is float
    assert type(bind1(Union[float, int], 3)) is int
    assert type(bind1(Union[float, int], 3.0)) is float
    assert bind1(Union[list[float], str], [1, 2]) == [1.0, 2.0]
    assert bind1(Union[Point, Item], {"name": "n", "qty": 1}) == {"name": "n", "qty": 1}


@pytest.mark.parametrize(
    ("annotation", "value", "errors"),
    [
        (int, "10x", ["x: expected integer, got string '10x'"]),
        (int, True, ["x: expected integer, got true"]),
        (int, 2.5, ["x: expected integer, got 2.5"]),
        (float, False, ["x: expected number, got false"]),
        (str, None, ["x: expected string, got null"]),
        (bool, 0, ["x: expected boolean, got 0"]),
        (Optional[int], "a", ["x: expected integer or null, got string 'a'"]),
        (Union[int, str], 2.5, ["x: expected integer or string, got 2.5"]),
        (Literal["a", "b"], "c", ["x: expected 'a' or 'b', got string 'c'"]),
        (Literal["a", "b", "c"], 1, ["x: expected one of 'a', 'b', 'c', got 1"]),
        (Color, "blue", ["x: expected 'red' or 'green', got string 'blue'"]),
        (Literal[1], True, ["x: expected 1, got true"]),
        (list[str], ["a", "b", 5], ["x[2]: expected string, got 5"]),
        (list[int], {"a": 1}, ["x: expected array, got object"]),
        (tuple[int, str], [1], ["x: expected 2 items, got 1"]),
        (set[int], [1, 2, 1], ["x: expected unique items, but items [0] and [2] are equal"]),
        (dict[str, int], {"a": "b"}, ["x.a: expected integer, got string 'b'"]),
        (dict[Color, int], {"blue": 1}, ["x.blue: invalid key: expected 'red' or 'green', got string 'blue'"]),
        (Item, {"name": "n"}, ["x.qty: required property missing"]),
        (Item, {"name": "n", "qty": 1, "qtty": 2}, ["x.qtty: unexpected property (did you mean 'qty'?)"]),
        (Point, [], ["x: expected object, got empty array"]),
        (Positive, {"n": 0}, ["x: invalid Positive: 'n' must be > 0: 0"]),
        (datetime.date, "2024-13-01", ["x: expected ISO 8601 date string, got string '2024-13-01'"]),
        (uuid.UUID, 5, ["x: expected UUID string, got 5"]),
        (Annotated[int, Field(minimum=0)], -1, ["x: expected a number >= 0, got -1"]),
        (Annotated[str, Field(pattern="^[a-z]+$")], "A", ["x: expected a string matching '^[a-z]+$', got 'A'"]),
        (Optional[Point], {"y": 1}, ["x.x: required property missing"]),
        (
            Union[Point, Item],
            {"x": "1"},
            ["x: matches none of the 2 alternatives of the union", "x.x: expected integer, got string '1'"],
        ),
        (float, 10**400, ["x: number too large for a float: 1000000000000000000000000000000000000..."]),
    ],
)
def test_bind_errors(annotation: Any, value: Any, errors: list[str]) -> None:
    assert bind_errors(annotation, value) == errors


async def search(
    city: str,
    filters: Optional[Filters] = None,
    limit: int = 10,
    unit: Literal["c", "f"] = "c",
) -> list[Item]:
    """Find things in a city.

    Args:
        city: Where to look.
        limit: How many results,
            at most 100.
    """
    return []


def test_bind_reference_messages() -> None:
    fs = describe_function(search)
    with pytest.raises(ArgumentError) as info:
        fs.bind({"limt": 5, "limit": "10x", "filters": {"tags": ["a", "b", 5]}})
    assert info.value.errors == [
        "city: required argument missing",
        "filters.tags[2]: expected string, got 5",
        "limit: expected integer, got string '10x'",
        "limt: unexpected argument (did you mean 'limit'?)",
    ]
    assert str(info.value) == "; ".join(info.value.errors)
    assert isinstance(info.value, ValueError)


def test_bind_defaults_and_none_arguments() -> None:
    fs = describe_function(search)
    assert fs.bind({"city": "Oslo"}) == {"city": "Oslo", "filters": None, "limit": 10, "unit": "c"}
    assert describe_function(lambda: None).bind(None) == {}
    with pytest.raises(ArgumentError, match=r"^arguments: expected object, got array$"):
        fs.bind([1])  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="did you mean"):
        fs.bind({"City": "x", "city": "x"})
    with pytest.raises(ArgumentError, match=r"zzz: unexpected argument \(expected one of 'city', 'filters'"):
        fs.bind({"city": "x", "zzz": 1})


def test_bind_nested_attrs_errors_and_conversion() -> None:
    fs = describe_function(search)
    bound = fs.bind({"city": "x", "filters": {"tags": ["a"], "color": "red", "limit": 3}})
    assert bound["filters"] == Filters(["a"], Color.RED, 3)
    with pytest.raises(ArgumentError) as info:
        fs.bind({"city": "x", "filters": {"tags": [], "colour": "red", "limit": -1}})
    assert info.value.errors == [
        "filters.colour: unexpected property (did you mean 'color'?)",
        "filters.limit: expected a number >= 0, got -1",
    ]


def test_bind_explicit_null_is_not_a_missing_argument() -> None:
    fs = describe_function(search)
    with pytest.raises(ArgumentError, match=r"^limit: expected integer, got null$"):
        fs.bind({"city": "x", "limit": None})


def test_bind_deep_recursive_value_is_an_error_not_a_crash() -> None:
    value: dict[str, Any] = {"value": 0}
    for i in range(5000):
        value = {"value": i, "children": [value]}
    with pytest.raises(ArgumentError, match="nested more than 100 levels deep"):
        bind1(Tree, value)


def test_bind_many_errors_are_summarised() -> None:
    errors = bind_errors(list[int], ["a"] * 200)
    assert len(errors) == 51
    assert errors[-1] == "... and 150 more errors"


def test_bind_accepts_what_the_schema_accepts_spot_checks() -> None:
    fs = describe_function(search)
    good = {"city": "x", "filters": {"tags": ["a"], "color": None}, "limit": 2.0}
    assert validate(good, fs.input_schema) == []
    assert fs.bind(good)["limit"] == 2
    bad = {"city": "x", "limit": True}
    assert validate(bad, fs.input_schema) != []
    with pytest.raises(ArgumentError):
        fs.bind(bad)


# -- describe_function -------------------------------------------------------------------------------------------


def test_describe_function_input_schema() -> None:
    fs = describe_function(search)
    assert isinstance(fs, FunctionSchema)
    assert fs.input_schema == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Where to look."},
            "filters": {"anyOf": [{"$ref": "#/$defs/Filters"}, {"type": "null"}], "default": None},
            "limit": {"type": "integer", "description": "How many results, at most 100.", "default": 10},
            "unit": {"type": "string", "enum": ["c", "f"], "default": "c"},
        },
        "required": ["city"],
        "additionalProperties": False,
        "$defs": {"Filters": schema_of(Filters)},
    }
    assert fs.description == "Find things in a city."
    assert fs.skipped == ()
    assert fs.headers == {}


def test_describe_function_output_wrapping() -> None:
    fs = describe_function(search)
    assert fs.wraps_output
    assert fs.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "required": ["result"],
        "additionalProperties": False,
        "$defs": {"Item": schema_of(Item)},
    }
    assert fs.dump_output([{"name": "a", "qty": 1}]) == {"result": [{"name": "a", "qty": 1}]}


@pytest.mark.parametrize("returns", [inspect_empty := object(), None, type(None), str, Annotated[str, Field()]])
def test_output_schema_absent(returns: Any) -> None:
    def f() -> None:
        pass

    if returns is inspect_empty:
        f.__annotations__ = {}
    else:
        f.__annotations__ = {"return": returns}
    fs = describe_function(f)
    assert fs.output_schema is None and not fs.wraps_output


def test_output_schema_unstructured_predicate() -> None:
    class TextContent:
        pass

    def f() -> list[TextContent]:
        return []

    with pytest.raises(TypeError, match="return annotation"):
        describe_function(f)
    fs = describe_function(f, unstructured=lambda tp: typing.get_origin(tp) is list)
    assert fs.output_schema is None


@pytest.mark.parametrize(
    ("returns", "value", "structured"),
    [
        (int, 5, {"result": 5}),
        (float, 2, {"result": 2}),
        (bool, True, {"result": True}),
        (list[str], ("a", "b"), {"result": ["a", "b"]}),
        (Optional[Point], None, {"result": None}),
        (Point, Point(1, 2), {"x": 1, "y": 2}),
        (Filters, Filters(["t"], Color.GREEN), {"tags": ["t"], "color": "green", "limit": 10}),
        (Item, {"name": "a", "qty": 1, "extra": "dropped"}, {"name": "a", "qty": 1}),
        (dict[str, set[int]], {"a": {3, 1, 2}}, {"a": [1, 2, 3]}),
        (tuple[Color, datetime.date], (Color.RED, datetime.datetime(2024, 1, 2, 3)), {"result": ["red", "2024-01-02"]}),
        (datetime.datetime, datetime.datetime(2024, 1, 2, 3), {"result": "2024-01-02T03:00:00"}),
        (uuid.UUID, uuid.UUID(int=1), {"result": "00000000-0000-0000-0000-000000000001"}),
        (
            Any,
            {"p": Point(1), "s": frozenset({"b", "a"}), "e": Level.LOW},
            {"result": {"p": {"x": 1, "y": 0}, "s": ["a", "b"], "e": 1}},
        ),
        (Tree, Tree(1, (Tree(2),)), {"value": 1, "children": [{"value": 2, "children": []}]}),
        (Literal["a", 1], 1, {"result": 1}),
        (Level, 2, {"result": 2}),
        (Private, Private("s"), {"secret": "s"}),
    ],
)
def test_dump_output(returns: Any, value: Any, structured: Any) -> None:
    fs = describe_function(_fn(Any, returns=returns))
    dumped = fs.dump_output(value)
    assert dumped == structured
    assert json.loads(json.dumps(dumped)) == dumped
    assert fs.output_schema is not None
    assert fs.output_schema["type"] == "object"
    assert validate(dumped, fs.output_schema) == []
    assert fs.wraps_output == ("result" in structured and returns not in (Item, Filters, Point, Tree, Private))


@pytest.mark.parametrize(
    ("returns", "value", "message"),
    [
        (int, "5", "result: expected integer, got string '5'"),
        (float, math.inf, "result: expected a finite number, got inf"),
        (Point, {"x": 1}, "result: expected Point, got object"),
        (Item, {"name": "a"}, "result.qty: required key missing"),
        (list[int], [1, None], "result[1]: expected integer, got null"),
        (Any, object(), "result: cannot represent a value of type object as JSON"),
        (Annotated[int, Field(maximum=3)], 4, "result: expected a number <= 3, got 4"),
    ],
)
def test_dump_output_errors(returns: Any, value: Any, message: str) -> None:
    fs = describe_function(_fn(Any, returns=returns))
    with pytest.raises(OutputError) as info:
        fs.dump_output(value)
    assert info.value.errors == [message]
    assert isinstance(info.value, ValueError)


def test_dump_output_of_cyclic_value_is_an_error() -> None:
    fs = describe_function(_fn(Any, returns=Any))
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(OutputError, match="nested more than"):
        fs.dump_output(cyclic)


class Context:
    pass


def test_skip_injected_parameters() -> None:
    def tool(ctx: Context, query: str, other: Annotated[Context, "meta"]) -> None:
        pass

    fs = describe_function(tool, skip=lambda tp: tp is Context)
    assert fs.skipped == ("ctx", "other")
    assert list(fs.input_schema["properties"]) == ["query"]
    assert fs.bind({"query": "q"}) == {"query": "q"}
    with pytest.raises(ArgumentError, match="ctx: unexpected argument"):
        fs.bind({"query": "q", "ctx": 1})


def test_skip_unresolvable_annotation_gets_the_raw_string() -> None:
    def tool(ctx: "MissingContext", q: str) -> None:  # type: ignore[name-defined] # noqa: F821
        pass

    with pytest.raises(TypeError, match=r"parameter 'ctx' of .*cannot resolve type hints \(NameError"):
        describe_function(tool)
    fs = describe_function(tool, skip=lambda tp: tp == "MissingContext")
    assert fs.skipped == ("ctx",)


def test_var_args_are_refused() -> None:
    def star(*names: str) -> None:
        pass

    def kw(**options: int) -> None:
        pass

    with pytest.raises(TypeError, match=r"parameter 'names' of .*\*names cannot be described by a JSON Schema"):
        describe_function(star)
    with pytest.raises(TypeError, match=r"\*\*options cannot be described"):
        describe_function(kw)


def test_positional_only_is_refused() -> None:
    def f(a: int, /) -> None:
        pass

    with pytest.raises(TypeError, match="positional-only"):
        describe_function(f)


def test_unannotated_parameters_are_any() -> None:
    def f(a, b=3):  # type: ignore[no-untyped-def]
        pass

    fs = describe_function(f)
    assert fs.input_schema["properties"] == {"a": {}, "b": {"default": 3}}
    assert fs.bind({"a": [1]}) == {"a": [1], "b": 3}


def test_non_json_default_is_left_out_of_the_schema() -> None:
    sentinel = object()

    def f(a: int = sentinel, b: Color = Color.RED, c: Optional[datetime.date] = datetime.date(2024, 1, 1)) -> None:  # type: ignore[assignment]
        pass

    fs = describe_function(f)
    assert fs.input_schema["properties"]["a"] == {"type": "integer"}
    assert fs.input_schema["properties"]["b"]["default"] == "red"
    assert fs.input_schema["properties"]["c"]["default"] == "2024-01-01"
    assert fs.bind({})["a"] is sentinel


class Service:
    """A class whose methods are tools."""

    def lookup(self, key: str, n: int = 1) -> dict[str, int]:
        """Look a key up.

        :param key: The key to look up.
        :param n: How many,
            at most 5.
        :returns: counts
        """
        return {key: n}

    def __call__(self, q: str) -> int:
        """Callable objects work too.

        Parameters
        ----------
        q : str
            The query.
        """
        return len(q)


def test_bound_methods_partials_and_callables() -> None:
    service = Service()
    fs = describe_function(service.lookup)
    assert list(fs.input_schema["properties"]) == ["key", "n"]
    assert fs.input_schema["properties"]["key"]["description"] == "The key to look up."
    assert fs.input_schema["properties"]["n"]["description"] == "How many, at most 5."
    assert fs.description == "Look a key up."
    assert fs.output_schema == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert not fs.wraps_output

    partial = describe_function(functools.partial(service.lookup, n=3))
    assert partial.input_schema["properties"]["n"]["default"] == 3
    assert partial.input_schema["required"] == ["key"]

    call = describe_function(service)
    assert call.input_schema["properties"] == {"q": {"type": "string", "description": "The query."}}
    assert call.description == "Callable objects work too."
    assert call.wraps_output


def test_decorated_function_uses_the_wrapped_signature_and_docs() -> None:
    def decorator(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    @decorator
    def tool(a: int) -> int:
        """Adds one."""
        return a + 1

    fs = describe_function(tool)
    assert fs.input_schema["properties"] == {"a": {"type": "integer"}}
    assert fs.description == "Adds one."


def test_field_description_wins_over_docstring() -> None:
    def f(a: Annotated[int, Field(description="from Field")], b: int) -> None:
        """Summary line.

        More text.

        Args:
            a: from docs
            b (int): b from docs
        """

    fs = describe_function(f)
    assert fs.input_schema["properties"]["a"]["description"] == "from Field"
    assert fs.input_schema["properties"]["b"]["description"] == "b from docs"
    assert fs.description == "Summary line.\n\nMore text."


def test_field_rejects_non_json_extras() -> None:
    with pytest.raises(TypeError, match="JSON-serialisable"):
        Field(minimum=object())
    assert "minimum=0" in repr(Field(description="d", minimum=0))


MODULE_WITH_FUTURE_ANNOTATIONS = """
from __future__ import annotations
import attrs
from typing import Optional

@attrs.define
class Later:
    child: Optional[Later] = None
    name: str = "x"

def tool(a: Later, b: int | None = None, c: list[Later] = []) -> Later:
    return a
"""


def test_future_annotations_and_forward_references(tmp_path: Any) -> None:
    path = tmp_path / "future_tool_module.py"
    path.write_text(textwrap.dedent(MODULE_WITH_FUTURE_ANNOTATIONS))
    spec = importlib.util.spec_from_file_location("future_tool_module", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["future_tool_module"] = module
    try:
        spec.loader.exec_module(module)
        fs = describe_function(module.tool)
        props = fs.input_schema["properties"]
        assert props["a"] == {"$ref": "#/$defs/Later"}
        assert props["b"] == {"type": ["integer", "null"], "default": None}
        assert fs.output_schema is not None and fs.output_schema["type"] == "object"
        bound = fs.bind({"a": {"child": {"name": "y"}}})
        assert bound["a"] == module.Later(module.Later(None, "y"))
        assert fs.dump_output(bound["a"]) == {"child": {"child": None, "name": "y"}, "name": "x"}
    finally:
        del sys.modules["future_tool_module"]


# -- x-mcp-header ------------------------------------------------------------------------------------------------


def test_header_in_schema_and_mapping() -> None:
    def f(
        region: Annotated[str, Field(header="Region", description="Where")],
        shard: Annotated[int, Field(header="Shard-Id")] = 0,
        dry: Annotated[bool, Field(header="Dry_Run!")] = False,
        mode: Annotated[Literal["a", "b"], Field(header="Mode")] = "a",
    ) -> None:
        pass

    fs = describe_function(f)
    props = fs.input_schema["properties"]
    assert props["region"] == {"type": "string", "description": "Where", "x-mcp-header": "Region"}
    assert props["shard"] == {
        "type": "integer",
        "x-mcp-header": "Shard-Id",
        "default": 0,
        "minimum": -(2**53 - 1),
        "maximum": 2**53 - 1,
    }
    assert props["dry"]["x-mcp-header"] == "Dry_Run!"
    assert props["mode"]["type"] == "string"
    assert fs.headers == {"Region": "region", "Shard-Id": "shard", "Dry_Run!": "dry", "Mode": "mode"}
    with pytest.raises(ArgumentError, match=r"shard: expected a number <= 9007199254740991, got 9007199254740992"):
        fs.bind({"region": "eu", "shard": 2**53})


@pytest.mark.parametrize("name", ["", "Has Space", "a:b", "line\nbreak", "ünicode", "(x)", 5])
def test_header_name_must_be_a_token(name: Any) -> None:
    with pytest.raises(TypeError, match="RFC 9110 token"):
        Field(header=name)


@pytest.mark.parametrize("annotation", [float, Optional[str], list[str], Point, Any, Union[int, str]])
def test_header_only_on_string_integer_boolean(annotation: Any) -> None:
    with pytest.raises(TypeError, match="needs a str, int or bool parameter"):
        describe_function(_fn(Annotated[annotation, Field(header="H")], returns=type(None)))


def test_header_names_are_unique_case_insensitively() -> None:
    def f(a: Annotated[str, Field(header="Region")], b: Annotated[str, Field(header="region")]) -> None:
        pass

    with pytest.raises(TypeError, match="already used by parameter 'a'"):
        describe_function(f)


def test_header_not_allowed_inside_other_types() -> None:
    @attrs.define
    class WithHeader:
        region: Annotated[str, Field(header="Region")]

    for annotation in (
        WithHeader,
        list[Annotated[str, Field(header="R")]],
        Optional[Annotated[str, Field(header="R")]],
    ):
        with pytest.raises(TypeError, match="only allowed on a tool parameter itself"):
            describe_function(_fn(annotation, returns=type(None)))
    with pytest.raises(TypeError, match="only allowed on a tool parameter"):
        json_schema_for(Annotated[str, Field(header="R")])


def test_headers_declared_in_an_explicit_input_schema_are_checked() -> None:
    def tool(**arguments: Any) -> None:
        pass

    ok = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    assert describe_function(tool, input_schema=ok).headers == {"Region": "region"}
    for prop, message in [
        ({"type": "number", "x-mcp-header": "N"}, "only integer, string or boolean"),
        ({"type": "string", "x-mcp-header": "bad name"}, "RFC 9110 token"),
    ]:
        with pytest.raises(TypeError, match=message):
            describe_function(tool, input_schema={"type": "object", "properties": {"p": prop}})
    twice = {
        "type": "object",
        "properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}},
    }
    with pytest.raises(TypeError, match="used twice"):
        describe_function(tool, input_schema=twice)
    nested = {
        "type": "object",
        "properties": {"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}},
    }
    with pytest.raises(TypeError, match="reachable through 'properties' alone"):
        describe_function(tool, input_schema=nested)


# -- hand-written schemas ----------------------------------------------------------------------------------------


def test_explicit_input_schema_is_kept_verbatim() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/Q"}, "n": {"type": "integer", "minimum": 1}},
        "required": ["q"],
        "additionalProperties": True,
        "$defs": {"Q": {"type": "string", "minLength": 1}},
    }

    def tool(ctx: Context, **arguments: Any) -> Point:
        return Point(1)

    fs = describe_function(tool, input_schema=schema, skip=lambda tp: tp is Context)
    assert fs.input_schema == schema and fs.input_schema is not schema
    assert fs.skipped == ("ctx",)
    raw = {"q": "x", "n": 2.0, "extra": [1]}
    assert fs.bind(raw) == raw  # validated, not converted
    with pytest.raises(ArgumentError) as info:
        fs.bind({"q": "", "n": 0})
    assert info.value.errors == ["q: expected at least 1 characters, got 0", "n: expected a number >= 1, got 0"]
    with pytest.raises(ArgumentError, match=r"^q: required argument missing$"):
        fs.bind(None)
    assert fs.output_schema is not None and fs.output_schema["properties"]["x"] == {"type": "integer"}


def test_explicit_schemas_must_be_objects() -> None:
    with pytest.raises(TypeError, match="input_schema must be"):
        describe_function(lambda: None, input_schema={"type": "array"})
    with pytest.raises(TypeError, match="output_schema must be"):
        describe_function(lambda: None, output_schema=[])  # type: ignore[arg-type]
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(200):
        deep = {"type": "object", "properties": {"a": deep}}
    with pytest.raises(ValueError, match="levels deep"):
        describe_function(lambda: None, input_schema=deep)


def test_explicit_output_schema_validates_dumped_value() -> None:
    out = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    fs = describe_function(lambda: None, output_schema=out)
    assert fs.output_schema == out and not fs.wraps_output
    assert fs.dump_output({"n": Level.HIGH}) == {"n": 2}
    with pytest.raises(OutputError, match=r"result.n: expected integer, got string 'x'"):
        fs.dump_output({"n": "x"})


# -- the validator, keyword by keyword ---------------------------------------------------------------------------

V = [
    # type
    ({"type": "string"}, "a", True),
    ({"type": "string"}, 1, False),
    ({"type": "integer"}, 1, True),
    ({"type": "integer"}, 1.0, True),
    ({"type": "integer"}, 1.5, False),
    ({"type": "integer"}, True, False),
    ({"type": "number"}, 1, True),
    ({"type": "number"}, 1.5, True),
    ({"type": "number"}, False, False),
    ({"type": "boolean"}, False, True),
    ({"type": "boolean"}, 0, False),
    ({"type": "null"}, None, True),
    ({"type": "null"}, 0, False),
    ({"type": "array"}, [], True),
    ({"type": "array"}, {}, False),
    ({"type": "object"}, {}, True),
    ({"type": "object"}, [], False),
    ({"type": ["string", "null"]}, None, True),
    ({"type": ["string", "null"]}, 1, False),
    ({"type": "nonsense"}, 1, False),
    # enum / const
    ({"enum": [1, "a", None]}, 1.0, True),
    ({"enum": [1, "a", None]}, True, False),
    ({"enum": [[1, 2], {"a": 1}]}, {"a": 1.0}, True),
    ({"enum": [[1, 2]]}, [2, 1], False),
    ({"const": False}, 0, False),
    ({"const": False}, False, True),
    ({"const": {"a": [1]}}, {"a": [1]}, True),
    # objects
    ({"properties": {"a": {"type": "integer"}}}, {"a": 1, "b": "x"}, True),
    ({"properties": {"a": {"type": "integer"}}}, {"a": "x"}, False),
    ({"properties": {"a": {"type": "integer"}}}, "not an object", True),
    ({"required": ["a"]}, {"b": 1}, False),
    ({"required": ["a"]}, {"a": None}, True),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1}, True),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"b": 1}, False),
    ({"additionalProperties": {"type": "string"}}, {"b": "x"}, True),
    ({"additionalProperties": {"type": "string"}}, {"b": 1}, False),
    ({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False}, {"x-a": 1}, True),
    ({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False}, {"x-a": "1"}, False),
    ({"patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False}, {"y": 1}, False),
    ({"propertyNames": {"maxLength": 2}}, {"ab": 1}, True),
    ({"propertyNames": {"maxLength": 2}}, {"abc": 1}, False),
    ({"minProperties": 1}, {}, False),
    ({"maxProperties": 1}, {"a": 1, "b": 2}, False),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, False),
    ({"dependentRequired": {"a": ["b"]}}, {"c": 1}, True),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1}, False),
    # arrays
    ({"items": {"type": "integer"}}, [1, 2], True),
    ({"items": {"type": "integer"}}, [1, "2"], False),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]}, [1, "a", None], True),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]}, ["a"], False),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1], True),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2], False),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [1, "a"], True),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [1, 2], False),
    ({"items": [{"type": "integer"}], "additionalItems": False}, [1, 2], False),  # draft-07 tuple form
    ({"minItems": 2}, [1], False),
    ({"maxItems": 1}, [1, 2], False),
    ({"uniqueItems": True}, [1, 2], True),
    ({"uniqueItems": True}, [1, 1.0], False),
    ({"uniqueItems": True}, [1, True], True),
    ({"uniqueItems": True}, [{"a": 1, "b": 2}, {"b": 2, "a": 1}], False),
    ({"uniqueItems": False}, [1, 1], True),
    ({"contains": {"type": "string"}}, [1, "a"], True),
    ({"contains": {"type": "string"}}, [1, 2], False),
    ({"contains": {"type": "string"}, "minContains": 2}, ["a", 1], False),
    ({"contains": {"type": "string"}, "maxContains": 1}, ["a", "b"], False),
    # strings
    ({"minLength": 2}, "a", False),
    ({"minLength": 2}, "\U0001f600\U0001f600", True),  # code points, not UTF-16 units
    ({"maxLength": 2}, "abc", False),
    ({"pattern": "^a+$"}, "aaa", True),
    ({"pattern": "b"}, "abc", True),  # search, not match
    ({"pattern": "^a+$"}, "ab", False),
    ({"pattern": "("}, "ab", False),  # an invalid pattern is reported
    ({"format": "email"}, "not an email", True),  # format is an annotation
    # numbers
    ({"minimum": 1}, 1, True),
    ({"minimum": 1}, 0.5, False),
    ({"exclusiveMinimum": 1}, 1, False),
    ({"maximum": 1}, 1, True),
    ({"maximum": 1}, 1.5, False),
    ({"exclusiveMaximum": 1}, 1, False),
    ({"minimum": 1, "exclusiveMinimum": True}, 1, False),  # draft-04 spelling
    ({"multipleOf": 3}, 9, True),
    ({"multipleOf": 3}, 10, False),
    ({"multipleOf": 0.1}, 0.3, True),
    ({"multipleOf": 0.5}, 0.3, False),
    ({"minimum": 1}, "0", True),  # numeric keywords ignore strings
    # combinators
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "a", True),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, None, False),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, -1, True),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 1, False),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, "a", True),  # minimum ignores strings
    ({"allOf": [{"type": "integer"}, {"minimum": 0}]}, -1, False),
    ({"not": {"type": "integer"}}, 1, False),
    ({"not": {"type": "integer"}}, "1", True),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, -1, False),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, "x", True),
    ({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}, None, False),
    # $ref
    ({"$defs": {"p": {"type": "integer"}}, "$ref": "#/$defs/p"}, 1, True),
    ({"$defs": {"p": {"type": "integer"}}, "$ref": "#/$defs/p"}, "1", False),
    ({"definitions": {"p": {"type": "integer"}}, "properties": {"a": {"$ref": "#/definitions/p"}}}, {"a": "1"}, False),
    ({"$defs": {"a/b": {"type": "integer"}}, "$ref": "#/$defs/a~1b"}, "x", False),
    ({"$defs": {"a b": {"type": "integer"}}, "$ref": "#/$defs/a%20b"}, "x", False),
    ({"$ref": "#/$defs/missing"}, 1, False),
    ({"$ref": "https://example.com/schema.json"}, 1, False),
    ({"$ref": "other.json#/x"}, 1, False),
    ({"$ref": "#anchor"}, 1, False),
    ({"$id": "https://x.test/s", "$defs": {"i": {"type": "integer"}}, "$ref": "https://x.test/s#/$defs/i"}, 1, True),
    ({"properties": {"n": {"$ref": "#"}}, "type": "object"}, {"n": {"n": {}}}, True),
    ({"properties": {"n": {"$ref": "#"}}, "type": "object"}, {"n": {"n": 1}}, False),
    # boolean and odd schemas
    (True, 1, True),
    (False, 1, False),
    ({}, [1, {"a": None}], True),
    ({"unknownKeyword": 5, "x-custom": {}}, 1, True),
    ({"properties": {"a": 5}}, {"a": 1}, False),  # an invalid subschema is an error, not a crash
]


@pytest.mark.parametrize(("schema", "instance", "valid"), V)
def test_validator_keywords(schema: Any, instance: Any, valid: bool) -> None:
    errors = validate(instance, schema)
    assert (errors == []) == valid, errors
    assert all(isinstance(error, str) and error.startswith("$") for error in errors)


@pytest.mark.parametrize(
    ("schema", "instance", "errors"),
    [
        ({"type": "integer"}, "10x", ["$: expected integer, got string '10x'"]),
        ({"type": ["string", "null"]}, 5, ["$: expected string or null, got 5"]),
        (
            {"properties": {"filters": {"properties": {"tags": {"items": {"type": "string"}}}}}},
            {"filters": {"tags": ["a", "b", 5]}},
            ["$.filters.tags[2]: expected string, got 5"],
        ),
        ({"required": ["city"]}, {}, ["$.city: required property missing"]),
        ({"additionalProperties": False}, {"odd key": 1}, ['$["odd key"]: unexpected property']),
        ({"enum": ["a", "b"]}, "c", ["$: expected 'a' or 'b', got string 'c'"]),
        ({"const": 3}, 4, ["$: expected 3, got 4"]),
        ({"anyOf": [{"type": "integer"}, {"enum": ["x"]}]}, "y", ["$: expected integer or 'x', got string 'y'"]),
        (
            {"anyOf": [{"type": "integer"}, {"type": "object", "required": ["a"]}]},
            {},
            ["$.a: required property missing"],
        ),
        (
            {"oneOf": [{"type": "number"}, {"type": "integer"}]},
            1,
            ["$: matches alternatives #0 and #1 of oneOf, but must match exactly one"],
        ),
        ({"not": {}}, 1, ["$: must not match the schema under 'not'"]),
        ({"uniqueItems": True}, [1, 2, 1], ["$: expected unique items, but items [0] and [2] are equal"]),
        ({"minItems": 2}, [], ["$: expected at least 2 items, got 0"]),
        ({"maxLength": 1}, "ab", ["$: expected at most 1 characters, got 2"]),
        ({"exclusiveMinimum": 0}, 0, ["$: expected a number > 0, got 0"]),
        ({"multipleOf": 2}, 3, ["$: expected a multiple of 2, got 3"]),
        (
            {"$ref": "https://example.com/s.json"},
            1,
            ["$: $ref 'https://example.com/s.json' is not a local reference; remote schemas are never fetched"],
        ),
        ({"$ref": "#/$defs/nope"}, 1, ["$: $ref '#/$defs/nope' does not resolve to anything in this schema"]),
        (False, None, ["$: no value is allowed here"]),
    ],
)
def test_validator_messages(schema: Any, instance: Any, errors: list[str]) -> None:
    assert validate(instance, schema) == errors


def test_validator_reports_all_errors_and_caps_them() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"minimum": 3}}, "required": ["c"]}
    assert validate({"a": 1, "b": 2}, schema) == [
        "$.c: required property missing",
        "$.a: expected string, got 1",
        "$.b: expected a number >= 3, got 2",
    ]
    many = validate(list(range(100)), {"items": {"type": "string"}})
    assert len(many) == 51 and many[-1] == "... and 50 more errors"


# -- adversarial schemas: bounded in time, never RecursionError ----------------------------------------------------


def _timed(instance: Any, schema: Any, limit: float = 2.0) -> list[str]:
    started = time.perf_counter()
    errors = validate(instance, schema)
    assert time.perf_counter() - started < limit
    return errors


def test_deeply_nested_anyof_is_bounded() -> None:
    schema: Any = {"type": "integer"}
    for _ in range(10_000):
        schema = {"anyOf": [schema]}
    errors = _timed(1, schema)
    assert errors == ["$: schema and value nest more than 100 levels deep; giving up"]


def test_cyclic_refs_are_errors() -> None:
    assert _timed(1, {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}) == [
        "$: $ref '#/$defs/a' loops back to itself without consuming any of the value"
    ]
    assert _timed(1, {"$ref": "#"}) != []
    assert _timed(1, {"anyOf": [{"$ref": "#"}, {"type": "string"}]}) != []
    assert _timed({"a": 1}, {"allOf": [{"$ref": "#/allOf/0"}]}) != []


def test_self_containing_python_schema_is_bounded() -> None:
    schema: dict[str, Any] = {}
    schema["anyOf"] = [schema]
    assert _timed(1, schema) != []
    with pytest.raises(ValueError, match="levels deep"):
        check_schema_bounded(schema)


def test_exponential_schema_is_bounded_by_work() -> None:
    schema: Any = {"type": "string"}
    for _ in range(40):
        schema = {"anyOf": [schema, {"allOf": [schema]}]}
    errors = _timed(1, schema)
    assert errors == ["$: validation gave up after 100010 steps (schema or value too complex)"]


def test_deep_instance_is_bounded() -> None:
    deep: Any = 1
    for _ in range(10_000):
        deep = [deep]
    recursive = {
        "$defs": {"n": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}},
        "$ref": "#/$defs/n",
    }
    assert "giving up" in _timed(deep, recursive)[0]
    assert "nested more than 100 levels" in _timed(deep, {"uniqueItems": True})[0]
    assert "nested more than 100 levels" in _timed([deep], {"enum": [1]})[0]


def test_large_honest_instances_validate_linearly() -> None:
    items = [{"id": i, "name": "x"} for i in range(20_000)]
    schema = {
        "type": "array",
        "items": {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"}}},
    }
    assert _timed(items, schema, limit=5.0) == []


def test_check_schema_bounded() -> None:
    check_schema_bounded({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}})
    deep: Any = {}
    for _ in range(150):
        deep = {"not": deep}
    with pytest.raises(ValueError, match="nests more than 100 levels deep"):
        check_schema_bounded(deep)
    check_schema_bounded(deep, max_depth=200)
    with pytest.raises(ValueError, match="too large"):
        check_schema_bounded({"enum": list(range(20))}, max_nodes=10)


# -- properties ---------------------------------------------------------------------------------------------------

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=12,
)

points = st.builds(Point, st.integers(), st.integers())
trees = st.recursive(
    st.builds(Tree, st.integers(), st.just(())),
    lambda children: st.builds(Tree, st.integers(), st.lists(children, max_size=3).map(tuple)),
    max_leaves=10,
)
items = st.fixed_dictionaries({"name": st.text(), "qty": st.integers()})
finite = st.floats(allow_nan=False, allow_infinity=False)

ROUND_TRIP = [
    (list[Point], st.lists(points, max_size=4)),
    (dict[str, tuple[int, str]], st.dictionaries(st.text(), st.tuples(st.integers(), st.text()), max_size=4)),
    (Optional[Tree], st.none() | trees),
    (set[Color], st.sets(st.sampled_from(Color))),
    (list[Item], st.lists(items, max_size=3)),
    (Union[int, float, None], st.none() | st.integers() | finite),
    (frozenset[Literal["a", "b", 3]], st.frozensets(st.sampled_from(["a", "b", 3]))),
    (
        Filters,
        st.builds(
            Filters, st.lists(st.text(), max_size=3), st.none() | st.sampled_from(Color), st.integers(min_value=0)
        ),
    ),
    (dict[Color, list[datetime.date]], st.dictionaries(st.sampled_from(Color), st.lists(st.dates(), max_size=2))),
]


@pytest.mark.parametrize(("annotation", "strategy"), ROUND_TRIP, ids=[str(a) for a, _ in ROUND_TRIP])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip_dump_then_bind(annotation: Any, strategy: Any, data: Any) -> None:
    fs = describe_function(_fn(annotation))
    value = data.draw(strategy)
    structured = fs.dump_output(value)
    structured = json.loads(json.dumps(structured))  # really JSON
    assert fs.output_schema is not None
    assert validate(structured, fs.output_schema) == []
    json_value = structured["result"] if fs.wraps_output else structured
    assert validate({"x": json_value}, fs.input_schema) == []
    assert fs.bind({"x": json_value}) == {"x": value}


def _mixed(
    a: int,
    b: Optional[list[str]] = None,
    c: Union[float, Literal["auto"]] = "auto",
    d: Optional[Item] = None,
    e: dict[str, bool] = {},  # noqa: B006
) -> None:
    pass


MIXED = describe_function(_mixed)
argument_objects = st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e", "f"]), json_values, max_size=5) | (
    st.fixed_dictionaries(
        {"a": st.integers()},
        optional={
            "b": st.lists(st.text(max_size=2)) | json_values,
            "c": finite | st.just("auto") | json_values,
            "d": st.none() | items | json_values,
            "e": st.dictionaries(st.text(max_size=2), st.booleans()),
        },
    )
)


@settings(max_examples=300, deadline=None)
@given(arguments=argument_objects)
def test_bind_accepts_exactly_what_the_input_schema_accepts(arguments: dict[str, Any]) -> None:
    schema_ok = validate(arguments, MIXED.input_schema) == []
    try:
        MIXED.bind(arguments)
        bind_ok = True
    except ArgumentError:
        bind_ok = False
    assert schema_ok == bind_ok
