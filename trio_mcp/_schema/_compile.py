"""Compile Python annotations into nodes, once, when a tool is declared.

Anything that cannot be represented raises ``TypeError`` naming where it was found, so a bad annotation fails
at import time rather than on the first call.
"""

from __future__ import annotations

import dataclasses
import enum
import operator
import sys
import types
import typing
from collections import abc
from typing import Any, Literal, Union

import attrs

from ._docstrings import class_doc, parse_docstring
from ._field import Field
from ._nodes import (
    NO_DEFAULT,
    AnnotatedNode,
    AnyNode,
    ArrayNode,
    BoolNode,
    DictNode,
    EnumNode,
    FloatNode,
    FormatNode,
    IntNode,
    LiteralNode,
    Node,
    NoneNode,
    ObjectField,
    ObjectNode,
    SchemaContext,
    StrNode,
    TupleNode,
    UnionNode,
    is_format_type,
)
from ._pydantic import PydanticNode, is_pydantic_model

__all__ = ["Compiler", "json_schema_for", "resolve_hints", "type_name"]

_UNION_TYPES: tuple[Any, ...] = (Union, types.UnionType)
_SUPPORTED = (
    "str, int, float, bool, None, Any, Literal[...], Enum subclasses, list[T], tuple[...], set[T], frozenset[T], "
    "dict[str, T], TypedDict, attrs classes, dataclasses, pydantic models, datetime, date, time, UUID, Path, "
    "Decimal, and unions of these"
)


def type_name(tp: Any) -> str:
    """A readable spelling of an annotation for error messages."""
    if isinstance(tp, type) and not typing.get_args(tp):
        return tp.__qualname__ if tp.__module__ in ("builtins", "__main__") else f"{tp.__module__}.{tp.__qualname__}"
    return repr(tp).replace("typing.", "")


def resolve_hints(owner: Any, where: str) -> dict[str, Any]:
    """``get_type_hints(owner, include_extras=True)``, as a ``TypeError`` naming ``where`` when it fails."""
    try:
        return typing.get_type_hints(owner, include_extras=True)
    except Exception as exc:  # NameError for a missing name, but also anything a hint's evaluation raises
        raise TypeError(f"{where}: cannot resolve type hints ({type(exc).__name__}: {exc})") from None


def _qualifier(origin: Any) -> bool | None:
    """True for ``Required``, False for ``NotRequired``, else None: typing's, or on Python 3.10 (whose typing has
    neither) typing_extensions', which is loaded whenever an annotation uses them."""
    if origin is None:
        return None
    for module in (typing, sys.modules.get("typing_extensions")):
        if origin is getattr(module, "Required", None):
            return True
        if origin is getattr(module, "NotRequired", None):
            return False
    return None


def _is_typeddict(tp: Any) -> bool:
    """A TypedDict of typing's, or of typing_extensions' (which Python 3.10's typing does not recognize)."""
    extensions = sys.modules.get("typing_extensions")
    return typing.is_typeddict(tp) or (extensions is not None and bool(extensions.is_typeddict(tp)))


def strip_qualifiers(tp: Any) -> tuple[Any, bool | None]:
    """Remove ``Required``/``NotRequired`` (also inside ``Annotated``); returns (type, required-or-None)."""
    required: bool | None = None
    metadata: list[Any] = []
    while True:
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            metadata.extend(tp.__metadata__)
            tp = typing.get_args(tp)[0]
        elif _qualifier(origin) is not None:
            required = _qualifier(origin)
            tp = typing.get_args(tp)[0]
        else:
            break
    if metadata:
        tp = operator.getitem(typing.Annotated, (tp, *metadata))
    return tp, required


class Compiler:
    """Compiles annotations; one instance per schema document, so each named type is compiled once."""

    def __init__(self) -> None:
        self.named: dict[Any, ObjectNode] = {}

    def compile(self, tp: Any, where: str, header_ok: bool = False) -> Node:
        """The node for ``tp``; ``TypeError`` (naming ``where``) if it cannot be represented."""
        if tp is Any:
            return AnyNode()
        if tp is None or tp is type(None):
            return NoneNode()
        if isinstance(tp, type):
            simple = {str: StrNode, int: IntNode, float: FloatNode, bool: BoolNode}.get(tp)
            if simple is not None:
                return simple()
            if is_format_type(tp):
                return FormatNode(tp)
        if isinstance(tp, (str, typing.ForwardRef)):
            raise TypeError(f"{where}: unresolved forward reference {tp!r}")
        supertype = getattr(tp, "__supertype__", None)
        if supertype is not None:  # typing.NewType
            return self.compile(supertype, where, header_ok)
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            fields = [meta for meta in tp.__metadata__ if isinstance(meta, Field)]
            if not header_ok and any(field.header is not None for field in fields):
                raise TypeError(
                    f"{where}: Field(header=...) is only allowed on a tool parameter itself "
                    "(a top-level str, int or bool property), not inside another type"
                )
            inner = self.compile(args[0], where)
            return AnnotatedNode(inner, fields) if fields else inner
        if origin in _UNION_TYPES:
            return UnionNode([self.compile(arg, where) for arg in args])
        if origin is Literal:
            return self._literal(args, where)
        if _qualifier(origin) is not None:
            raise TypeError(f"{where}: {type_name(tp)} is only meaningful on a TypedDict item")
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return EnumNode(tp, where)
        if isinstance(tp, typing.TypeVar):
            raise TypeError(f"{where}: unbound type variable {tp!r}; use a concrete type")
        if isinstance(tp, type) and attrs.has(tp):
            return self._object(tp, where, is_class=True)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self._object(tp, where, is_class=True)
        if _is_typeddict(tp):
            return self._object(tp, where, is_class=False)
        decimals = sys.modules.get("decimal")  # an annotation cannot be Decimal before decimal is imported
        if decimals is not None and tp is decimals.Decimal:
            from ._decimal import DecimalNode

            return DecimalNode()
        if is_pydantic_model(tp):
            return PydanticNode(tp, where)
        if isinstance(origin, type) and attrs.has(origin):
            raise TypeError(f"{where}: generic attrs classes such as {type_name(tp)} are not supported")
        container = origin if origin is not None else tp
        if container in (list, abc.Sequence, abc.MutableSequence, typing.Sequence, typing.MutableSequence, list):
            return ArrayNode(self._item(args, 0, where), list)
        if container in (
            set,
            frozenset,
            abc.Set,
            abc.MutableSet,
            typing.AbstractSet,
            typing.MutableSet,
            set,
            frozenset,
        ):
            item = self._item(args, 0, where)
            if not item.hashable:
                raise TypeError(
                    f"{where}: the items of {type_name(tp)} must be hashable "
                    "(str, int, float, bool, enums, literals, tuples or frozen attrs classes); "
                    "use list[...] instead"
                )
            kind = frozenset if container in (frozenset, frozenset, abc.Set, typing.AbstractSet) else set
            return ArrayNode(item, kind)
        if container in (tuple, tuple):
            if origin is None or (len(args) == 2 and args[1] is Ellipsis):
                return ArrayNode(self._item(args, 0, where), tuple)
            if args == ((),):  # typing.Tuple[()] on old Pythons
                args = ()
            return TupleNode([self.compile(arg, where) for arg in args])
        if container in (dict, abc.Mapping, abc.MutableMapping, typing.Mapping, typing.MutableMapping, dict):
            key = self._item(args, 0, where) if args else StrNode()
            if not _string_like(key):
                raise TypeError(
                    f"{where}: {type_name(tp)} has keys that are not strings; JSON object keys are "
                    "always strings (use str, a Literal of strings or a string-valued Enum)"
                )
            return DictNode(key, self._item(args, 1, where), dict)
        raise TypeError(f"{where}: unsupported type {type_name(tp)}; supported are {_SUPPORTED}")

    def _item(self, args: tuple[Any, ...], index: int, where: str) -> Node:
        return self.compile(args[index], where) if len(args) > index else AnyNode()

    def _literal(self, args: tuple[Any, ...], where: str) -> Node:
        for value in args:
            ok = value is None or isinstance(value, (str, int, bool, enum.Enum))
            if isinstance(value, enum.Enum):
                ok = value.value is None or isinstance(value.value, (str, int, float, bool))
            if not ok:
                raise TypeError(f"{where}: Literal value {value!r} is not a string, int, bool, None or enum member")
        return LiteralNode(args)

    def _object(self, cls: Any, where: str, is_class: bool) -> Node:
        known = self.named.get(cls)
        if known is not None:
            return known
        node = ObjectNode(cls, is_class)
        self.named[cls] = node
        hints = resolve_hints(cls, f"{cls.__qualname__} (used by {where})")
        field_docs = parse_docstring(class_doc(cls))[1]
        fields: list[ObjectField] = []
        if dataclasses.is_dataclass(cls):
            fields = self._dataclass_fields(cls, hints, field_docs, where)
        elif is_class:
            for attribute in attrs.fields(cls):
                if not attribute.init:
                    continue
                field_where = f"field {attribute.name!r} of {cls.__qualname__} (used by {where})"
                annotation = hints.get(attribute.name, Any)
                init_name = getattr(attribute, "alias", None) or attribute.name.lstrip("_")
                has_default = attribute.default is not attrs.NOTHING
                default = attribute.default if has_default else NO_DEFAULT
                fields.append(
                    ObjectField(
                        name=init_name,
                        init_name=init_name,
                        attribute=attribute.name,
                        node=self.compile(annotation, field_where),
                        required=not has_default,
                        default=default,
                        description=field_docs.get(attribute.name) or field_docs.get(init_name),
                    )
                )
        else:
            required_keys = getattr(cls, "__required_keys__", frozenset(hints))
            for name, annotation in hints.items():
                annotation, required = strip_qualifiers(annotation)
                field_where = f"item {name!r} of {cls.__qualname__} (used by {where})"
                fields.append(
                    ObjectField(
                        name=name,
                        init_name=name,
                        attribute=name,
                        node=self.compile(annotation, field_where),
                        required=(name in required_keys) if required is None else required,
                        description=field_docs.get(name),
                    )
                )
        node.set_fields(fields)
        return node

    def _dataclass_fields(
        self, cls: Any, hints: dict[str, Any], field_docs: dict[str, str], where: str
    ) -> list[ObjectField]:
        fields: list[ObjectField] = []
        for field in dataclasses.fields(cls):
            if not field.init:
                continue
            field_where = f"field {field.name!r} of {cls.__qualname__} (used by {where})"
            has_default = field.default is not dataclasses.MISSING
            has_factory = field.default_factory is not dataclasses.MISSING
            fields.append(
                ObjectField(
                    name=field.name,
                    init_name=field.name,
                    attribute=field.name,
                    node=self.compile(hints.get(field.name, Any), field_where),
                    required=not (has_default or has_factory),
                    default=field.default if has_default else NO_DEFAULT,
                    description=field_docs.get(field.name),
                )
            )
        return fields


def _string_like(node: Node) -> bool:
    if isinstance(node, StrNode):
        return True
    if isinstance(node, (LiteralNode, EnumNode)):
        return all(isinstance(value, str) for value in node.values)
    return False


def json_schema_for(tp: Any) -> dict[str, Any]:
    """The JSON Schema (2020-12) of one annotation, with named types (attrs, TypedDict) under ``$defs``.

    Raises ``TypeError`` for annotations this package cannot validate and convert.
    """
    node = Compiler().compile(tp, f"json_schema_for({type_name(tp)})")
    ctx = SchemaContext()
    return ctx.finish(node.schema(ctx))
