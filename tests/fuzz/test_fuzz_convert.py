"""Property tests of the wire converter over every params and result type in the METHODS registry: random JSON
gives an instance or ``WireFormatError`` (nothing else), and values generated from the types round-trip exactly."""

from __future__ import annotations

import functools
import types
from typing import Any, Literal, Union, get_args, get_origin

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trio_mcp._wire.convert import (
    WireFormatError,
    from_wire,
    params_from_wire,
    to_wire,
    wire_name,
)
from trio_mcp._wire.methods import METHODS, TASKS_EXTENSION_METHODS
from trio_mcp.errors import INVALID_PARAMS, McpError
from trio_mcp.types import UnknownContent, UnknownInputRequest, WireType

_PROFILE = settings.get_profile("trio_mcp_fuzz")
# Sixty-odd types, two properties each: a share of the profile's count per type keeps the file to seconds.
FUZZ = settings(_PROFILE, max_examples=max(5, _PROFILE.max_examples // 12))

WIRE_TYPES: dict[str, Any] = {}
for _spec in (*METHODS.values(), *TASKS_EXTENSION_METHODS.values()):
    for _kind, _t in (("params", _spec.params_type), ("result", _spec.result_type)):
        if _t is not None:
            WIRE_TYPES[f"{_spec.method}:{_kind}:{getattr(_t, '__name__', _t)}"] = _t

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)


def _field_keys(t: Any, depth: int = 2) -> list[str]:
    """Wire keys of a class (and of union members), so random objects hit real fields with wrong values."""
    keys: set[str] = set()
    for cls in _classes(t):
        for field in attrs.fields(cls):
            if field.name != "extra":
                keys.add(wire_name(field.name))
    return sorted(keys)


def _classes(t: Any) -> list[type]:
    if isinstance(t, type) and issubclass(t, WireType):
        return [t]
    if get_origin(t) in (Union, types.UnionType):
        return [c for a in get_args(t) for c in _classes(a)]
    return []


@functools.cache
def near_objects(t: Any) -> st.SearchStrategy[Any]:
    """Objects whose keys are the type's own wire keys (plus strangers), with random JSON values."""
    keys = _field_keys(t) or ["x"]
    return st.one_of(
        json_values,
        st.dictionaries(st.sampled_from(keys + ["extraKey"]), json_values, max_size=len(keys) + 1),
    )


@pytest.mark.parametrize("t", list(WIRE_TYPES.values()), ids=list(WIRE_TYPES))
@FUZZ
@given(data=st.data())
def test_random_json_is_an_instance_or_a_wire_format_error(t: Any, data: st.DataObject) -> None:
    value = data.draw(near_objects(t))
    try:
        instance = from_wire(value, t)
    except WireFormatError as exc:
        assert exc.errors and all(" @ $" in e for e in exc.errors), exc.errors
        with pytest.raises(McpError) as info:
            params_from_wire(value, t)
        assert info.value.code == INVALID_PARAMS
        return
    wire = to_wire(instance)
    assert isinstance(wire, dict)
    # Reading what we wrote gives the same thing back (unknown keys included).
    assert to_wire(from_wire(wire, t)) == wire


# --- values generated from the types ----------------------------------------------------------------------------


@functools.cache
def strategy_for(t: Any, depth: int) -> st.SearchStrategy[Any]:
    """Wire JSON that is valid for ``t`` by construction (fields that default to None may be left out)."""
    if t is Any:
        return json_values
    if t is str:
        return st.text(max_size=8)
    if t is int:
        return st.integers()
    if t is float:
        return st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False))
    if t is bool:
        return st.booleans()
    if t is type(None):
        return st.none()
    origin = get_origin(t)
    if origin is Literal:
        return st.sampled_from(get_args(t))
    if origin is list:
        (elem,) = get_args(t)
        return st.lists(strategy_for(elem, depth - 1), max_size=2 if depth > 0 else 0)
    if origin is dict:
        _, value = get_args(t)
        return st.dictionaries(st.text(max_size=6), strategy_for(value, depth - 1), max_size=2 if depth > 0 else 0)
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(t) if a is not type(None)]
        return st.one_of([strategy_for(a, depth) for a in members])
    if t in (UnknownContent, UnknownInputRequest):
        return st.fixed_dictionaries({"type": st.just("x-future"), "method": st.just("x/future"), "x": json_values})
    assert isinstance(t, type) and issubclass(t, WireType), t
    required: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for field in attrs.fields(t):
        if field.name == "extra":
            continue
        key = wire_name(field.name)
        if field.default is None:
            if depth > 0:
                optional[key] = strategy_for(field.type, depth - 1).filter(lambda v: v is not None)
        else:
            required[key] = strategy_for(field.type, depth - 1)
    return st.fixed_dictionaries(required, optional=optional)


@pytest.mark.parametrize("t", list(WIRE_TYPES.values()), ids=list(WIRE_TYPES))
@FUZZ
@given(data=st.data())
def test_values_generated_from_the_types_round_trip(t: Any, data: st.DataObject) -> None:
    wire = data.draw(strategy_for(t, depth=3))
    instance = from_wire(wire, t)
    assert to_wire(instance) == wire
