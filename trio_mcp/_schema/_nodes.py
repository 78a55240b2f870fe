"""Compiled annotations: nodes that give a JSON Schema, convert JSON to Python, and dump Python back to JSON.

``convert`` (JSON → annotated Python types) collects every error with its path; ``dump`` (Python → JSON) checks
the value against the annotation. A value is accepted by ``convert`` exactly when the generated schema accepts
it, except that date/time/UUID strings must also parse (the schema's ``format`` is advisory).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import pathlib
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import attrs

from ._docstrings import class_doc, parse_docstring
from ._field import Field
from ._util import MAX_DEPTH, Abort, Err, Path, json_kind, merge_alternatives, mismatch, show
from ._validator import validate_errors


class _Fail:
    def __repr__(self) -> str:
        return "<conversion failed>"


#: What ``convert``/``dump`` return after recording an error.
FAIL: Final[Any] = _Fail()


class _NoDefault:
    def __repr__(self) -> str:
        return "<no default>"


#: Marks a property or parameter without a default value.
NO_DEFAULT: Final[Any] = _NoDefault()


# -- conversion state ----------------------------------------------------------------------------------------


class Run:
    """State of one ``convert``/``dump`` walk: the errors so far, the nesting depth, and strictness.

    Strict runs (tried first inside unions) do not widen int → float or narrow 3.0 → int, so ``int | float``
    keeps 3 an int and 3.5 a float whatever the order of the union.
    """

    __slots__ = ("errors", "lax", "depth")

    def __init__(self, lax: bool = True, depth: int = 0) -> None:
        self.errors: list[Err] = []
        self.lax = lax
        self.depth = depth

    def fail(self, error: Err) -> Any:
        """Record ``error`` and return ``FAIL``."""
        self.errors.append(error)
        return FAIL

    def child(self, lax: bool) -> Run:
        """A scratch run for trying one alternative of a union."""
        return Run(lax and self.lax, self.depth)

    def enter(self, path: Path) -> None:
        """Go one container deeper, refusing absurd nesting (which would otherwise overflow the stack)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Abort(path, f"value nested more than {MAX_DEPTH} levels deep")


class SchemaContext:
    """Collects named types into ``$defs`` while one schema document is generated."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self.names: dict[Any, str] = {}

    def ref(self, node: ObjectNode) -> dict[str, Any]:
        """A ``$ref`` to ``node``'s definition, generating the definition the first time."""
        name = self.names.get(node.cls)
        if name is None:
            base = re.sub(r"[^A-Za-z0-9_.\-]", "_", node.cls.__name__) or "Type"
            name, n = base, 1
            while name in self.defs:
                n += 1
                name = f"{base}{n}"
            self.names[node.cls] = name
            self.defs[name] = {}  # placeholder, so recursive references see the name taken
            self.defs[name] = node.body(self)
        return {"$ref": f"#/$defs/{name}"}

    def finish(self, root: dict[str, Any]) -> dict[str, Any]:
        """Inline a root that is only a reference (so the top has ``type``) and attach ``$defs``."""
        ref = root.get("$ref")
        if (
            isinstance(ref, str)
            and ref.startswith("#/$defs/")
            and set(root) <= {"$ref", "title", "description", "examples", "default"}
        ):
            name = ref[len("#/$defs/") :]
            body = json.loads(json.dumps(self.defs[name]))  # a copy: the definition may stay in $defs too
            root = {**body, **{key: value for key, value in root.items() if key != "$ref"}}
            if not _mentions(self.defs, ref):
                del self.defs[name]
        if self.defs:
            root = {**root, "$defs": self.defs}
        return root


def _mentions(document: Any, ref: str) -> bool:
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("$ref") == ref:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


# -- nodes ---------------------------------------------------------------------------------------------------


class Node:
    """One compiled annotation."""

    #: What a mismatch error says was expected here.
    expected: tuple[str, ...] = ()
    #: True when the JSON form is always an object (so an output of this type needs no ``result`` wrapper).
    is_object = False
    #: True when converted values can be set members.
    hashable = True

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        """A fresh JSON Schema for this type (named types go into ``ctx``)."""
        raise NotImplementedError

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        """JSON value → Python value of the annotated type, or ``FAIL`` after recording errors in ``run``."""
        raise NotImplementedError

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        """Python value → JSON value, or ``FAIL`` when ``value`` does not fit the annotation."""
        raise NotImplementedError


class AnyNode(Node):
    """``Any`` (and unannotated parameters): no constraint."""

    hashable = False

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        return value

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        return dump_any(value, path, run)


class StrNode(Node):
    """``str``."""

    expected = ("string",)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"type": "string"}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if type(value) is str:
            return value
        if isinstance(value, str):
            return str.__str__(value)
        return run.fail(mismatch(path, self.expected, value))

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, enum.Enum):
            value = value.value
        return self.convert(value, path, run)


class IntNode(Node):
    """``int``: booleans are refused; integral floats such as ``3.0`` are accepted (JSON Schema calls them integers)."""

    expected = ("integer",)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"type": "integer"}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return int(value)
        if run.lax and isinstance(value, float) and value.is_integer():
            return int(value)
        return run.fail(mismatch(path, self.expected, value))

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, enum.Enum):
            value = value.value
        return self.convert(value, path, run)


class FloatNode(Node):
    """``float``: integers are accepted and converted; non-finite floats cannot be dumped (JSON has none)."""

    expected = ("number",)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"type": "number"}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, float):
            return float(value)
        if run.lax and isinstance(value, int) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                return run.fail(Err(path, f"number too large for a float: {show(value)}"))
        return run.fail(mismatch(path, self.expected, value))

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, enum.Enum):
            value = value.value
        if isinstance(value, float):
            if not math.isfinite(value):
                return run.fail(Err(path, f"expected a finite number, got {show(value)}"))
            return float(value)
        if run.lax and isinstance(value, int) and not isinstance(value, bool):
            return int(value)
        return run.fail(mismatch(path, self.expected, value))


class BoolNode(Node):
    """``bool``."""

    expected = ("boolean",)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"type": "boolean"}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, bool):
            return value
        return run.fail(mismatch(path, self.expected, value))

    dump = convert


class NoneNode(Node):
    """``None``."""

    expected = ("null",)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return {"type": "null"}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if value is None:
            return None
        return run.fail(mismatch(path, self.expected, value))

    dump = convert


@functools.cache
def _formats() -> dict[Any, tuple[str | None, str, Callable[[str], Any]]]:
    """Types exchanged as strings: the JSON Schema ``format`` (None: no standard one), what an error calls them,
    and their parser. Built on first use: ``datetime`` and ``uuid`` are imported only by a schema that has them."""
    import datetime
    import uuid

    def parse_datetime(text: str) -> datetime.datetime:
        if sys.version_info < (3, 11) and text[-1:] in ("Z", "z"):
            text = text[:-1] + "+00:00"
        return datetime.datetime.fromisoformat(text)

    return {
        datetime.datetime: ("date-time", "ISO 8601 date-time string", parse_datetime),
        datetime.date: ("date", "ISO 8601 date string", datetime.date.fromisoformat),
        datetime.time: ("time", "ISO 8601 time string", datetime.time.fromisoformat),
        uuid.UUID: ("uuid", "UUID string", uuid.UUID),
        pathlib.Path: (None, "non-empty path string", _parse_path),
    }


def is_format_type(tp: type) -> bool:
    """Whether ``tp`` is exchanged as a formatted string (``FormatNode``)."""
    return tp.__module__.partition(".")[0] in ("datetime", "uuid", "pathlib") and tp in _formats()


def _text_form(value: Any) -> str | None:
    """A date, time, UUID, Decimal or path as its JSON string, None for any other value. A value of one of these
    types exists only once its module is imported, so none is imported here."""
    modules = sys.modules
    dates = modules.get("datetime")
    if dates is not None and isinstance(value, (dates.date, dates.time)):
        return str(value.isoformat())
    uuids, decimals = modules.get("uuid"), modules.get("decimal")
    if (
        (uuids is not None and isinstance(value, uuids.UUID))
        or (decimals is not None and isinstance(value, decimals.Decimal))
        or isinstance(value, pathlib.PurePath)
    ):
        return str(value)
    return None


def _parse_path(text: str) -> pathlib.Path:
    if not text or "\0" in text:
        raise ValueError("not a path")
    return pathlib.Path(text)


class FormatNode(Node):
    """``datetime``, ``date``, ``time``, ``UUID`` and ``Path``: strings (with a ``format`` where one is standard),
    parsed on the way in. A ``Path`` is only parsed: confining it to a folder is the tool's job."""

    def __init__(self, cls: Any) -> None:
        self.cls = cls
        self.format, description, self.parse = _formats()[cls]
        self.expected = (description,)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        if self.format is None:
            return {"type": "string", "minLength": 1}
        return {"type": "string", "format": self.format}

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, str):
            try:
                return self.parse(value)
            except (ValueError, IndexError):
                pass
        return run.fail(mismatch(path, self.expected, value))

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        if self.format is None:  # a Path
            if isinstance(value, pathlib.PurePath):
                return str(value)
        elif isinstance(value, self.cls):
            if self.format == "uuid":
                return str(value)
            if self.format == "date" and isinstance(value, sys.modules["datetime"].datetime):
                return value.date().isoformat()  # a datetime given for a date
            return value.isoformat()
        return run.fail(mismatch(path, (self.cls.__name__,), value))


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it for scalars: ``1 == 1.0`` but ``True != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if a is None or b is None:
        return a is b
    if isinstance(a, str) != isinstance(b, str):
        return False
    return bool(a == b)


def _choices_schema(values: Sequence[Any]) -> dict[str, Any]:
    kinds = list(dict.fromkeys(json_kind(value) for value in values))
    if "integer" in kinds and "number" in kinds:
        kinds.remove("integer")
    schema: dict[str, Any] = {"type": kinds[0] if len(kinds) == 1 else kinds}
    if len(values) == 1:
        schema["const"] = values[0]
    else:
        schema["enum"] = list(values)
    return schema


class LiteralNode(Node):
    """``Literal[...]`` of strings, ints, bools, None and Enum members (matched by JSON value)."""

    def __init__(self, literals: Sequence[Any]) -> None:
        self.literals = list(literals)
        self.values = [lit.value if isinstance(lit, enum.Enum) else lit for lit in self.literals]
        self.expected = tuple(show(value) for value in self.values)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return _choices_schema(self.values)

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        for literal, json_value in zip(self.literals, self.values):
            if _json_equal(value, json_value):
                return literal
        return run.fail(mismatch(path, self.expected, value))

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        for literal, json_value in zip(self.literals, self.values):
            if (isinstance(literal, enum.Enum) and value is literal) or _json_equal(value, json_value):
                return json_value
        return run.fail(mismatch(path, self.expected, value))


class EnumNode(Node):
    """An ``Enum`` subclass, exchanged by value; inlined as ``enum`` (so it can also carry an x-mcp-header)."""

    def __init__(self, cls: type[enum.Enum], where: str) -> None:
        self.cls = cls
        self.members = list(cls)
        if not self.members:
            raise TypeError(f"{where}: enum {cls.__qualname__} has no members")
        for member in self.members:
            if not (member.value is None or isinstance(member.value, (str, int, float, bool))):
                raise TypeError(
                    f"{where}: enum {cls.__qualname__} has the non-JSON value {member.value!r} "
                    f"(member {member.name}); only str, int, float, bool and None values can be used"
                )
        self.values = [member.value for member in self.members]
        self.expected = tuple(show(value) for value in self.values)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        schema = _choices_schema(self.values)
        if "const" in schema:
            schema["enum"] = [schema.pop("const")]
        return schema

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        for member in self.members:
            if _json_equal(value, member.value):
                return member
        return run.fail(mismatch(path, self.expected, value))

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        if isinstance(value, self.cls):
            return value.value
        for json_value in self.values:
            if not isinstance(value, enum.Enum) and _json_equal(value, json_value):
                return json_value
        return run.fail(mismatch(path, self.expected, value))


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class ArrayNode(Node):
    """``list[T]``, ``tuple[T, ...]``, ``set[T]`` and ``frozenset[T]`` (sets are ``uniqueItems`` arrays)."""

    expected = ("array",)
    hashable = False

    def __init__(self, item: Node, container: type) -> None:
        self.item = item
        self.container = container
        self.unique = container in (set, frozenset)
        self.hashable = container in (tuple, frozenset) and item.hashable

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array"}
        items = self.item.schema(ctx)
        if items:
            schema["items"] = items
        if self.unique:
            schema["uniqueItems"] = True
        return schema

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if not isinstance(value, (list, tuple)):
            return run.fail(mismatch(path, self.expected, value))
        run.enter(path)
        items = [self.item.convert(item, path + (index,), run) for index, item in enumerate(value)]
        run.depth -= 1
        if any(item is FAIL for item in items):
            return FAIL
        if self.unique:
            seen: dict[Any, int] = {}
            for index, item in enumerate(items):
                first = seen.setdefault(item, index)
                if first != index:
                    return run.fail(Err(path, f"expected unique items, but items [{first}] and [{index}] are equal"))
        return items if self.container is list else self.container(items)

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        accepted: tuple[type, ...] = (list, tuple, set, frozenset) if self.unique else (list, tuple)
        sequence: Any = value
        if not isinstance(value, accepted):
            return run.fail(mismatch(path, self.expected, value))
        run.enter(path)
        items = [self.item.dump(item, path + (index,), run) for index, item in enumerate(sequence)]
        run.depth -= 1
        if any(item is FAIL for item in items):
            return FAIL
        if self.unique:
            by_text = {_canonical(item): item for item in items}
            if len(by_text) != len(items):
                return run.fail(Err(path, "expected unique items, but two items have the same JSON form"))
            items = [by_text[text] for text in sorted(by_text)]
        return items


class TupleNode(Node):
    """A fixed-length ``tuple[A, B]``: ``prefixItems`` with exactly that many items."""

    expected = ("array",)

    def __init__(self, items: list[Node]) -> None:
        self.items = items
        self.hashable = all(item.hashable for item in items)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        n = len(self.items)
        if not n:
            return {"type": "array", "maxItems": 0}
        return {
            "type": "array",
            "prefixItems": [item.schema(ctx) for item in self.items],
            "items": False,
            "minItems": n,
            "maxItems": n,
        }

    def _walk(self, value: Any, path: Path, run: Run, dump: bool) -> Any:
        if not isinstance(value, (list, tuple)):
            return run.fail(mismatch(path, self.expected, value))
        if len(value) != len(self.items):
            return run.fail(Err(path, f"expected {len(self.items)} items, got {len(value)}"))
        run.enter(path)
        out = [
            (node.dump if dump else node.convert)(item, path + (index,), run)
            for index, (node, item) in enumerate(zip(self.items, value))
        ]
        run.depth -= 1
        if any(item is FAIL for item in out):
            return FAIL
        return out if dump else tuple(out)

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        return self._walk(value, path, run, dump=False)

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        return self._walk(value, path, run, dump=True)


class DictNode(Node):
    """``dict[K, V]`` with string-like keys (``str``, string ``Literal``s or string-valued Enums)."""

    expected = ("object",)
    is_object = True
    hashable = False

    def __init__(self, key: Node, value: Node, container: type) -> None:
        self.key = key
        self.value = value
        self.container = container

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object"}
        values = self.value.schema(ctx)
        if values:
            schema["additionalProperties"] = values
        if not isinstance(self.key, StrNode):
            names = self.key.schema(ctx)
            names.pop("type", None)
            schema["propertyNames"] = names
        return schema

    def _walk(self, value: Any, path: Path, run: Run, dump: bool) -> Any:
        if not isinstance(value, Mapping):
            return run.fail(mismatch(path, self.expected, value))
        run.enter(path)
        out: dict[Any, Any] = {}
        failed = False
        for raw_key, item in value.items():
            where = path + (str(raw_key.value if isinstance(raw_key, enum.Enum) else raw_key),)
            key = (self.key.dump if dump else self.key.convert)(raw_key, where, run)
            if key is FAIL:
                run.errors[-1] = Err(where, f"invalid key: {run.errors[-1].text()}")
                failed = True
                continue
            converted = (self.value.dump if dump else self.value.convert)(item, where, run)
            if converted is FAIL:
                failed = True
            else:
                out[key] = converted
        run.depth -= 1
        if failed:
            return FAIL
        return out if dump or self.container is dict else self.container(out)

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        return self._walk(value, path, run, dump=False)

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        return self._walk(value, path, run, dump=True)


@attrs.frozen
class ObjectField:
    """One property of an attrs class or TypedDict."""

    name: str  # the JSON property name
    init_name: str  # keyword for the class's __init__ (attrs strips a leading underscore)
    attribute: str  # where to read it from an instance
    node: Node
    required: bool
    default: Any = NO_DEFAULT
    description: str | None = None


def suggest(name: Any, options: Sequence[str]) -> str:
    """``" (did you mean 'limit'?)"`` for a near miss, else a short list of what is allowed."""
    if isinstance(name, str):
        import difflib  # only when a name is wrong

        close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
        if close:
            return f" (did you mean {close[0]!r}?)"
    if not options:
        return " (none are accepted)"
    listed = ", ".join(repr(option) for option in options[:12])
    return f" (expected {'one of ' if len(options) > 1 else ''}{listed}{', ...' if len(options) > 12 else ''})"


class ObjectNode(Node):
    """An attrs class, dataclass or TypedDict: a named type, generated once into ``$defs`` and referenced by ``$ref``.

    Unknown properties are refused (``additionalProperties: false``) on the way in, and dropped on the way out.
    """

    expected = ("object",)
    is_object = True

    def __init__(self, cls: Any, is_class: bool) -> None:
        self.cls = cls
        #: True for attrs classes and dataclasses (instances with attributes), False for a TypedDict (a dict).
        self.is_class = is_class
        self.fields: list[ObjectField] = []  # filled after construction, so recursive types can refer to us
        self.by_name: dict[str, ObjectField] = {}
        self.description = parse_docstring(class_doc(cls))[0]
        self.hashable = is_class and getattr(cls, "__hash__", None) is not None

    def set_fields(self, fields: list[ObjectField]) -> None:
        """Complete the node once the field types are compiled."""
        self.fields = fields
        self.by_name = {field.name: field for field in fields}

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        return ctx.ref(self)

    def body(self, ctx: SchemaContext) -> dict[str, Any]:
        """The definition that goes into ``$defs``."""
        schema: dict[str, Any] = {"type": "object"}
        if self.description:
            schema["description"] = self.description
        schema["properties"] = {
            field.name: property_schema(field.node, ctx, field.default, field.description) for field in self.fields
        }
        required = [field.name for field in self.fields if field.required]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        if not isinstance(value, Mapping):
            return run.fail(mismatch(path, self.expected, value))
        run.enter(path)
        failed = False
        names = [field.name for field in self.fields]
        for key in value:
            if key not in self.by_name:
                run.fail(Err(path + (str(key),), "unexpected property" + suggest(key, names)))
                failed = True
        kwargs: dict[str, Any] = {}
        for field in self.fields:
            if field.name in value:
                converted = field.node.convert(value[field.name], path + (field.name,), run)
                if converted is FAIL:
                    failed = True
                else:
                    kwargs[field.init_name] = converted
            elif field.required:
                run.fail(Err(path + (field.name,), "required property missing"))
                failed = True
        run.depth -= 1
        if failed:
            return FAIL
        if not self.is_class:
            return kwargs
        try:
            return self.cls(**kwargs)
        except (TypeError, ValueError) as exc:
            return run.fail(Err(path, f"invalid {self.cls.__name__}: {exc}"))

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        if self.is_class:
            if not isinstance(value, self.cls):
                return run.fail(mismatch(path, (self.cls.__name__,), value))
        elif not isinstance(value, Mapping):
            return run.fail(mismatch(path, self.expected, value))
        run.enter(path)
        out: dict[str, Any] = {}
        failed = False
        for field in self.fields:
            if self.is_class:
                item = getattr(value, field.attribute)
            elif field.name in value:
                item = value[field.name]
            else:
                if field.required:
                    run.fail(Err(path + (field.name,), "required key missing"))
                    failed = True
                continue
            dumped = field.node.dump(item, path + (field.name,), run)
            if dumped is FAIL:
                failed = True
            else:
                out[field.name] = dumped
        run.depth -= 1
        return FAIL if failed else out


class AnnotatedNode(Node):
    """``Annotated[T, Field(...)]``: adds the Field's keywords to T's schema and enforces its constraints."""

    def __init__(self, inner: Node, fields: list[Field]) -> None:
        self.inner = inner
        self.fields = fields
        self.expected = inner.expected
        self.is_object = inner.is_object
        self.hashable = inner.hashable
        self.constraints: dict[str, Any] = {}
        for field in fields:
            self.constraints.update(field.extra_schema)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        schema = self.inner.schema(ctx)
        for field in self.fields:
            schema.update(field.schema_keys())
        return schema

    def _check(self, json_value: Any, result: Any, path: Path, run: Run) -> Any:
        if result is FAIL or not self.constraints:
            return result
        errors = validate_errors(json_value, self.constraints, path)
        if errors:
            run.errors.extend(errors)
            return FAIL
        return result

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        return self._check(value, self.inner.convert(value, path, run), path, run)

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        dumped = self.inner.dump(value, path, run)
        return self._check(dumped, dumped, path, run)


_STRUCTURAL_KEYS = frozenset({"$ref", "anyOf", "oneOf", "allOf", "not", "if", "const", "enum"})


class UnionNode(Node):
    """``A | B | ...``: the first alternative that accepts the value wins, trying exact matches first."""

    def __init__(self, members: list[Node]) -> None:
        self.members = members
        self.expected = tuple(name for member in members for name in member.expected)
        self.hashable = all(member.hashable for member in members)

    def schema(self, ctx: SchemaContext) -> dict[str, Any]:
        schemas = [member.schema(ctx) for member in self.members]
        if any(not schema for schema in schemas):
            return {}  # one alternative accepts anything
        nulls = [schema for schema in schemas if schema == {"type": "null"}]
        others = [schema for schema in schemas if schema != {"type": "null"}]
        if nulls and len(others) == 1:
            # Optional[T]: a compact {"type": [T, "null"]} where that says the same as anyOf
            other = others[0]
            kind = other.get("type")
            structural = _STRUCTURAL_KEYS & set(other)
            if isinstance(kind, (str, list)) and structural <= {"enum", "const"}:
                merged = dict(other)
                kinds = [kind] if isinstance(kind, str) else list(kind)
                merged["type"] = kinds + ["null"] if "null" not in kinds else kinds
                if "const" in merged:
                    merged["enum"] = [merged.pop("const")]
                if "enum" in merged and None not in merged["enum"]:
                    merged["enum"] = list(merged["enum"]) + [None]
                return merged
        flat: list[dict[str, Any]] = []
        for schema in schemas:
            flat.extend(schema["anyOf"] if set(schema) == {"anyOf"} else [schema])
        return {"anyOf": flat}

    def _walk(self, value: Any, path: Path, run: Run, dump: bool) -> Any:
        failures: list[list[Err]] = []
        for lax in (False, True) if run.lax else (False,):
            failures = []
            for member in self.members:
                attempt = run.child(lax)
                result = (member.dump if dump else member.convert)(value, path, attempt)
                if result is not FAIL and not attempt.errors:
                    return result
                failures.append(attempt.errors)
        run.errors.extend(merge_alternatives(value, path, failures, "the union"))
        return FAIL

    def convert(self, value: Any, path: Path, run: Run) -> Any:
        return self._walk(value, path, run, dump=False)

    def dump(self, value: Any, path: Path, run: Run) -> Any:
        return self._walk(value, path, run, dump=True)


def dump_any(value: Any, path: Path, run: Run) -> Any:
    """Python value → JSON by looking at the value alone (for ``Any``): attrs, Enum, sets, dates, UUIDs..."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, enum.Enum):
        return dump_any(value.value, path, run)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return run.fail(Err(path, f"expected a finite number, got {show(value)}"))
        return float(value)
    text = _text_form(value)
    if text is not None:
        return text
    run.enter(path)
    try:
        if isinstance(value, (list, tuple, set, frozenset)):
            sequence: list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any] = value
            items = [dump_any(item, path + (index,), run) for index, item in enumerate(sequence)]
            if isinstance(value, (set, frozenset)) and FAIL not in items:
                items.sort(key=_canonical)
            return FAIL if any(item is FAIL for item in items) else items
        if isinstance(value, Mapping) or attrs.has(type(value)) or _is_dataclass_instance(value):
            pairs = (
                value.items()
                if isinstance(value, Mapping)
                else ((field.name, getattr(value, field.name)) for field in dataclasses.fields(value))
                if _is_dataclass_instance(value)
                else (
                    (getattr(field, "alias", None) or field.name, getattr(value, field.name))
                    for field in attrs.fields(type(value))
                )
            )
            out: dict[str, Any] = {}
            failed = False
            for key, item in pairs:
                if isinstance(key, enum.Enum):
                    key = key.value
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    run.fail(Err(path, f"object keys must be strings, got {show(key)}"))
                    failed = True
                    continue
                dumped = dump_any(item, path + (str(key),), run)
                if dumped is FAIL:
                    failed = True
                else:
                    out[str(key)] = dumped
            return FAIL if failed else out
    finally:
        run.depth -= 1
    return run.fail(Err(path, f"cannot represent a value of type {type(value).__qualname__} as JSON"))


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def property_schema(
    node: Node, ctx: SchemaContext, default: Any = NO_DEFAULT, description: str | None = None
) -> dict[str, Any]:
    """The schema of one property: the node's, plus a JSON ``default`` and a docstring description."""
    schema = node.schema(ctx)
    if description and "description" not in schema:
        schema["description"] = description
    if default is not NO_DEFAULT and not isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        ok, dumped = try_dump(node, default)
        if ok:
            schema["default"] = dumped
    return schema


def try_dump(node: Node, value: Any) -> tuple[bool, Any]:
    """``(True, json)`` when ``value`` dumps cleanly under ``node``."""
    run = Run()
    try:
        dumped = node.dump(value, (), run)
    except Abort:
        return False, None
    return (dumped is not FAIL and not run.errors), dumped
