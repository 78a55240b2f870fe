"""Tool parameter types users already have: dataclasses, Enum, Literal, datetime/date/time, UUID, Path, Decimal —
schema, validation and conversion to the Python type before the call, and back for results."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import pathlib
import uuid
from typing import Any, Literal

import pytest

from trio_mcp import Server
from trio_mcp._schema import ArgumentError, describe_function, json_schema_for, validate
from trio_mcp.client import Client


class Size(enum.Enum):
    SMALL = "s"
    LARGE = "l"


@dataclasses.dataclass
class Address:
    """Where to deliver.

    Attributes:
        street: Street and number.
    """

    street: str
    city: str = "Paris"
    floors: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Tag:
    name: str


@dataclasses.dataclass
class Order:
    address: Address
    size: Size
    tags: frozenset[Tag] = frozenset()
    derived: int = dataclasses.field(default=0, init=False)


def test_dataclass_schema() -> None:
    schema = json_schema_for(Order)
    assert schema["required"] == ["address", "size"]
    assert set(schema["properties"]) == {"address", "size", "tags"}  # init=False fields are not inputs
    address = schema["$defs"]["Address"]
    assert address["description"] == "Where to deliver."
    assert address["properties"]["street"] == {"type": "string", "description": "Street and number."}
    assert address["properties"]["city"] == {"type": "string", "default": "Paris"}
    assert "default" not in address["properties"]["floors"]  # a factory default is not shown
    assert address["required"] == ["street"] and address["additionalProperties"] is False
    assert "description" not in schema["$defs"]["Tag"]  # no made-up description from the generated __doc__


def test_dataclass_bind_and_errors() -> None:
    def place(order: Order) -> Order:
        return order

    fs = describe_function(place)
    bound = fs.bind(
        {"order": {"address": {"street": "1 rue X", "floors": [1, 2]}, "size": "l", "tags": [{"name": "gift"}]}}
    )
    order = bound["order"]
    assert order == Order(Address("1 rue X", "Paris", [1, 2]), Size.LARGE, frozenset({Tag("gift")}))
    with pytest.raises(ArgumentError) as caught:
        fs.bind({"order": {"address": {"stret": "x"}, "size": "m"}})
    assert caught.value.errors == [
        "order.address.stret: unexpected property (did you mean 'street'?)",
        "order.address.street: required property missing",
        "order.size: expected 's' or 'l', got string 'm'",
    ]
    dumped = fs.dump_output(order)
    assert dumped == {
        "address": {"street": "1 rue X", "city": "Paris", "floors": [1, 2]},
        "size": "l",
        "tags": [{"name": "gift"}],
    }
    assert validate(dumped, fs.output_schema or {}) == []


def test_standard_library_scalars() -> None:
    def book(
        when: datetime.datetime,
        day: datetime.date,
        at: datetime.time,
        ref: uuid.UUID,
        file: pathlib.Path,
        price: decimal.Decimal,
        size: Size,
        mode: Literal["fast", "slow"] = "fast",
    ) -> dict[str, Any]:
        return {}

    fs = describe_function(book)
    props = fs.input_schema["properties"]
    assert props["when"] == {"type": "string", "format": "date-time"}
    assert props["ref"] == {"type": "string", "format": "uuid"}
    assert props["file"] == {"type": "string", "minLength": 1}
    assert props["price"]["type"] == ["number", "string"]
    assert props["size"] == {"type": "string", "enum": ["s", "l"]}
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"], "default": "fast"}
    bound = fs.bind(
        {
            "when": "2026-07-28T10:00:00Z",
            "day": "2026-07-28",
            "at": "10:30",
            "file": "notes/a.txt",
            "ref": "12345678-1234-5678-1234-567812345678",
            "price": "12.30",
            "size": "s",
        }
    )
    assert bound["when"] == datetime.datetime(2026, 7, 28, 10, tzinfo=datetime.timezone.utc)
    assert bound["day"] == datetime.date(2026, 7, 28) and bound["at"] == datetime.time(10, 30)
    assert bound["ref"] == uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert bound["file"] == pathlib.Path("notes/a.txt")
    assert bound["price"] == decimal.Decimal("12.30") and str(bound["price"]) == "12.30"
    assert bound["size"] is Size.SMALL and bound["mode"] == "fast"


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.1, decimal.Decimal("0.1")), (3, decimal.Decimal(3)), ("-1.5e3", decimal.Decimal("-1.5e3"))],
)
def test_decimal_accepts_numbers_and_decimal_strings(value: Any, expected: decimal.Decimal) -> None:
    def price(amount: decimal.Decimal) -> None: ...

    assert describe_function(price).bind({"amount": value})["amount"] == expected


@pytest.mark.parametrize("value", ["NaN", "1,5", "", True, None, "Infinity"])
def test_decimal_refuses_what_is_not_a_finite_decimal(value: Any) -> None:
    def price(amount: decimal.Decimal) -> None: ...

    fs = describe_function(price)
    with pytest.raises(ArgumentError, match="amount: expected number or decimal string"):
        fs.bind({"amount": value})
    assert validate({"amount": value}, fs.input_schema) != []  # the schema says the same


@pytest.mark.parametrize("value", ["", 5, None])
def test_path_refuses_what_is_not_a_path(value: Any) -> None:
    def read(file: pathlib.Path) -> None: ...

    with pytest.raises(ArgumentError, match="file: expected non-empty path string"):
        describe_function(read).bind({"file": value})


def test_results_of_standard_library_types() -> None:
    def price() -> decimal.Decimal: ...

    def where() -> pathlib.Path: ...

    assert describe_function(price).dump_output(decimal.Decimal("9.99")) == {"result": "9.99"}
    assert describe_function(where).dump_output(pathlib.Path("a/b")) == {"result": "a/b"}

    def anything() -> Any: ...

    assert describe_function(anything).dump_output(Address("x")) == {
        "result": {"street": "x", "city": "Paris", "floors": []}
    }


# -- end to end: the tool receives Python objects ---------------------------------------------------------------

received: list[Any] = []
server = Server("types")


@server.tool()
async def deliver(order: Order, when: datetime.date, price: decimal.Decimal, folder: pathlib.Path) -> Address:
    """Record what arrived, with its Python types."""
    received.append((order, when, price, folder))
    return order.address


@pytest.fixture
def mcp_server() -> Server:
    return server


async def test_a_tool_receives_and_returns_these_types(mcp_client: Client) -> None:
    received.clear()
    result = await mcp_client.call_tool(
        "deliver",
        {
            "order": {"address": {"street": "2 Main St"}, "size": "s"},
            "when": "2026-01-02",
            "price": 4.5,
            "folder": "/srv/orders",
        },
    )
    assert result.is_error is not True
    assert received == [
        (
            Order(Address("2 Main St"), Size.SMALL),
            datetime.date(2026, 1, 2),
            decimal.Decimal("4.5"),
            pathlib.Path("/srv/orders"),
        )
    ]
    assert result.structured_content == {"street": "2 Main St", "city": "Paris", "floors": []}
    result = await mcp_client.call_tool(
        "deliver", {"order": {"address": {}, "size": "xl"}, "when": "soon", "price": "free", "folder": ""}
    )
    assert result.is_error is True
    text = result.content[0].text  # type: ignore[union-attr]
    for expected in (
        "order.address.street: required property missing",
        "when: expected ISO 8601 date string",
        "price: expected number or decimal string",
        "folder: expected non-empty path string",
    ):
        assert expected in text
