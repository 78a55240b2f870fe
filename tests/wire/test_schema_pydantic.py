"""Pydantic models as tool parameters and results: their own JSON Schema and their own validation.

pydantic is never a dependency of trio_mcp; the ``test`` extra installs it so this runs in CI.
"""

from __future__ import annotations

from typing import Any

import pytest

pydantic = pytest.importorskip("pydantic", reason="pydantic is not installed (pip install 'trio-mcp[test]')")

from trio_mcp import Server  # noqa: E402
from trio_mcp._schema import ArgumentError, describe_function, validate  # noqa: E402
from trio_mcp.client import Client  # noqa: E402


class Item(pydantic.BaseModel):  # type: ignore[name-defined,misc]
    sku: str = pydantic.Field(pattern=r"^[A-Z]{3}-\d+$", description="Stock keeping unit")
    quantity: int = pydantic.Field(ge=1)


class Cart(pydantic.BaseModel):  # type: ignore[name-defined,misc]
    """A shopping cart."""

    owner: str
    items: list[Item]
    note: str | None = None


def checkout(cart: Cart, coupon: str = "") -> Cart:
    return cart


def test_schema_is_pydantics_own_under_defs() -> None:
    fs = describe_function(checkout)
    assert fs.input_schema["properties"]["cart"] == {"$ref": "#/$defs/Cart"}
    assert fs.input_schema["$defs"]["Cart"] == {
        key: value for key, value in Cart.model_json_schema().items() if key != "$defs"
    }
    assert fs.input_schema["$defs"]["Item"]["properties"]["sku"]["pattern"] == r"^[A-Z]{3}-\d+$"
    assert fs.output_schema is not None and fs.output_schema["title"] == "Cart"  # an object: not wrapped
    assert validate({"cart": {"owner": "ann", "items": [{"sku": "ABC-1", "quantity": 2}]}}, fs.input_schema) == []


def test_bind_uses_model_validate_and_reports_paths() -> None:
    fs = describe_function(checkout)
    bound = fs.bind({"cart": {"owner": "ann", "items": [{"sku": "ABC-1", "quantity": 2}]}})
    assert isinstance(bound["cart"], Cart) and bound["cart"].items[0].quantity == 2
    with pytest.raises(ArgumentError) as caught:
        fs.bind({"cart": {"owner": "ann", "items": [{"sku": "bad", "quantity": 0}]}})
    assert [error.split(":")[0] for error in caught.value.errors] == ["cart.items[0].sku", "cart.items[0].quantity"]
    with pytest.raises(ArgumentError, match="cart: expected object, got string"):
        fs.bind({"cart": "nope"})


def test_dump_output_is_model_dump_json_mode() -> None:
    fs = describe_function(checkout)
    cart = Cart(owner="bo", items=[Item(sku="XYZ-9", quantity=1)])
    assert fs.dump_output(cart) == {"owner": "bo", "items": [{"sku": "XYZ-9", "quantity": 1}], "note": None}
    assert validate(fs.dump_output(cart), fs.output_schema or {}) == []


server = Server("shop")
server.add_tool(checkout)


@pytest.fixture
def mcp_server() -> Server:
    return server


async def test_over_the_wire(mcp_client: Client) -> None:
    tools = {tool.name: tool async for tool in mcp_client.iter_tools()}
    assert tools["checkout"].input_schema["$defs"]["Item"]["properties"]["quantity"]["minimum"] == 1
    result = await mcp_client.call_tool(
        "checkout", {"cart": {"owner": "cy", "items": [{"sku": "QQQ-3", "quantity": 5}]}}
    )
    assert result.structured_content == {"owner": "cy", "items": [{"sku": "QQQ-3", "quantity": 5}], "note": None}
    result = await mcp_client.call_tool("checkout", {"cart": {"owner": "cy", "items": [{"quantity": 5}]}})
    assert result.is_error is True
    error: Any = result.content[0]
    assert "cart.items[0].sku" in error.text
