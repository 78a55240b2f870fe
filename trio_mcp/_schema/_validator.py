"""A compact, bounded JSON Schema 2020-12 validator for hand-written schemas.

It covers the keywords that tool schemas use in practice and reports readable errors. Every walk is bounded:
nesting deeper than ``max_depth`` or more than ``max_steps`` units of work end validation with one error, a
``$ref`` that loops without consuming any of the value is an error, and remote references are never fetched.
Unknown keywords (and ``format``) are ignored, as the specification allows.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Hashable, Mapping
from typing import Any, Final, TypeGuard
from urllib.parse import unquote

from ._util import MAX_DEPTH, Abort, Err, Path, merge_alternatives, mismatch, render, show

__all__ = ["validate", "check_schema_bounded", "DEFAULT_MAX_STEPS", "STEPS_PER_VALUE", "DEFAULT_MAX_NODES"]

#: Units of work (one per subschema applied, one per value hashed) ``validate()`` may always spend ...
DEFAULT_MAX_STEPS: Final = 100_000
#: ... plus this many for each value in the instance, so large but honest documents validate in linear time.
STEPS_PER_VALUE: Final = 10
#: How many objects, arrays and scalars ``check_schema_bounded()`` accepts in one schema document.
DEFAULT_MAX_NODES: Final = 100_000

_MISSING: Final[Any] = object()
_Step = Callable[[Any, Path, "list[Err]"], bool]
_STRING_KEYWORDS: Final = frozenset({"minLength", "maxLength", "pattern"})
_NUMBER_KEYWORDS: Final = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
_OBJECT_KEYWORDS: Final = frozenset(
    {
        "properties",
        "required",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
    }
)
_ARRAY_KEYWORDS: Final = frozenset(
    {
        "prefixItems",
        "items",
        "additionalItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
    }
)
_COMBINATOR_KEYWORDS: Final = frozenset({"allOf", "anyOf", "oneOf", "not", "if"})


@functools.lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return None


def _has_type(instance: Any, name: Any) -> bool:
    if name == "string":
        return isinstance(instance, str)
    if name == "integer":
        if isinstance(instance, bool):
            return False
        return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())
    if name == "number":
        return isinstance(instance, (int, float)) and not isinstance(instance, bool)
    if name == "boolean":
        return isinstance(instance, bool)
    if name == "null":
        return instance is None
    if name == "object":
        return isinstance(instance, Mapping)
    if name == "array":
        return isinstance(instance, (list, tuple))
    return False


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_multiple(value: int | float, divisor: int | float) -> bool:
    if isinstance(value, int) and isinstance(divisor, int):
        return value % divisor == 0
    from fractions import Fraction  # only for a schema with a fractional multipleOf

    try:
        # Decimal text, not binary: 0.3 is a multiple of 0.1 as the schema author meant it.
        quotient = Fraction(str(value)) / Fraction(str(divisor))
    except (ValueError, ZeroDivisionError, OverflowError):
        return False
    return quotient.denominator == 1


class _Validator:
    """One validation run: holds the root document (for ``$ref``) and the work and depth counters."""

    def __init__(self, root: Any, max_depth: int, max_steps: int) -> None:
        self.root = root
        self.max_depth = max_depth
        self.max_steps = max_steps
        self.steps = 0
        self.depth = 0
        self.active_refs: set[tuple[int, int]] = set()
        self.resolved: dict[str, tuple[Any, str | None]] = {}
        self.enum_keys: dict[int, frozenset[Hashable]] = {}
        # id(schema) -> (schema, plan); holding the schema keeps its id from being reused during the run
        self.plans: dict[int, tuple[Any, list[_Step]]] = {}

    # -- bookkeeping ---------------------------------------------------------------------------------------

    def tick(self, path: Path) -> None:
        """Count one unit of work, giving up past the budget."""
        self.steps += 1
        if self.steps > self.max_steps:
            raise Abort(path, f"validation gave up after {self.max_steps} steps (schema or value too complex)")

    def key(self, value: Any, path: Path, depth: int = 0) -> Hashable:
        """A hashable stand-in with JSON equality: ``1 == 1.0``, but ``true != 1``; objects ignore key order."""
        self.tick(path)
        if depth > self.max_depth:
            raise Abort(path, f"value nested more than {self.max_depth} levels deep")
        if isinstance(value, bool):
            return ("b", value)
        if isinstance(value, (int, float)):
            return ("n", value)
        if isinstance(value, str):
            return ("s", value)
        if value is None:
            return ("z",)
        if isinstance(value, (list, tuple)):
            return ("a", tuple(self.key(item, path, depth + 1) for item in value))
        if isinstance(value, Mapping):
            return ("o", frozenset((k, self.key(v, path, depth + 1)) for k, v in value.items()))
        return ("?", id(value))

    def resolve(self, ref: str) -> tuple[Any, str | None]:
        """``(target, None)`` for a resolvable local reference, else ``(None, reason)``."""
        cached = self.resolved.get(ref)
        if cached is not None:
            return cached
        result = self._resolve(ref)
        self.resolved[ref] = result
        return result

    def _resolve(self, ref: str) -> tuple[Any, str | None]:
        fragment: str | None = None
        if ref.startswith("#"):
            fragment = ref[1:]
        elif isinstance(self.root, Mapping):
            base = self.root.get("$id")
            if isinstance(base, str) and base and ref.split("#", 1)[0] == base.split("#", 1)[0]:
                fragment = ref.split("#", 1)[1] if "#" in ref else ""
        if fragment is None:
            return None, f"$ref {show(ref, 80)} is not a local reference; remote schemas are never fetched"
        if fragment == "":
            return self.root, None
        if not fragment.startswith("/"):
            return None, f"$ref {show(ref, 80)} uses an anchor; only JSON-pointer references are supported"
        node = self.root
        for token in fragment[1:].split("/"):
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None, f"$ref {show(ref, 80)} does not resolve to anything in this schema"
        return node, None

    # -- the walk ------------------------------------------------------------------------------------------

    def check(self, instance: Any, schema: Any, path: Path) -> list[Err]:
        """Every error of ``instance`` against ``schema``; an empty list means valid."""
        self.steps += 1
        if self.steps > self.max_steps:
            raise Abort(path, f"validation gave up after {self.max_steps} steps (schema or value too complex)")
        if schema is True:
            return []
        if schema is False:
            return [Err(path, "no value is allowed here")]
        cached = self.plans.get(id(schema))
        if cached is None:
            if not isinstance(schema, Mapping):
                return [Err(path, f"invalid schema (expected an object or a boolean, got {type(schema).__name__})")]
            cached = self.plans[id(schema)] = (schema, self._plan(schema))
        self.depth += 1
        if self.depth > self.max_depth:
            raise Abort(path, f"schema and value nest more than {self.max_depth} levels deep; giving up")
        errors: list[Err] = []
        for step in cached[1]:
            if step(instance, path, errors):
                break
        self.depth -= 1
        return errors

    def _plan(self, schema: Mapping[str, Any]) -> list[_Step]:
        """The keyword checks that apply for ``schema``, built once per schema object and run."""
        plan: list[_Step] = []
        if "$ref" in schema:
            ref = schema["$ref"]

            def check_ref(instance: Any, path: Path, errors: list[Err]) -> bool:
                errors.extend(self._ref(instance, ref, path))
                return False

            plan.append(check_ref)
        if "type" in schema:
            types = schema["type"]
            names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
            expected = [str(name) for name in names] or ["nothing"]

            def check_type(instance: Any, path: Path, errors: list[Err]) -> bool:
                for name in names:
                    if _has_type(instance, name):
                        return False
                errors.append(mismatch(path, expected, instance))
                return True  # the other keywords would only repeat the point

            plan.append(check_type)
        enum = schema.get("enum")
        if isinstance(enum, list):
            enum_shown = [show(option) for option in enum]

            def check_enum(instance: Any, path: Path, errors: list[Err]) -> bool:
                keys = self.enum_keys.get(id(enum))
                if keys is None:
                    keys = self.enum_keys[id(enum)] = frozenset(self.key(option, path) for option in enum)
                if self.key(instance, path) not in keys:
                    errors.append(mismatch(path, enum_shown, instance))
                return False

            plan.append(check_enum)
        if "const" in schema:
            const = schema["const"]
            const_shown = [show(const)]

            def check_const(instance: Any, path: Path, errors: list[Err]) -> bool:
                if self.key(instance, path) != self.key(const, path):
                    errors.append(mismatch(path, const_shown, instance))
                return False

            plan.append(check_const)
        keys = set(schema)
        if keys & _STRING_KEYWORDS:

            def check_string(instance: Any, path: Path, errors: list[Err]) -> bool:
                if isinstance(instance, str):
                    self._string(instance, schema, path, errors)
                return False

            plan.append(check_string)
        if keys & _NUMBER_KEYWORDS:

            def check_number(instance: Any, path: Path, errors: list[Err]) -> bool:
                if _is_number(instance):
                    self._number(instance, schema, path, errors)
                return False

            plan.append(check_number)
        if keys & _OBJECT_KEYWORDS:

            def check_object(instance: Any, path: Path, errors: list[Err]) -> bool:
                if isinstance(instance, Mapping):
                    self._object(instance, schema, path, errors)
                return False

            plan.append(check_object)
        if keys & _ARRAY_KEYWORDS:

            def check_array(instance: Any, path: Path, errors: list[Err]) -> bool:
                if isinstance(instance, (list, tuple)):
                    self._array(instance, schema, path, errors)
                return False

            plan.append(check_array)
        if keys & _COMBINATOR_KEYWORDS:

            def check_combinators(instance: Any, path: Path, errors: list[Err]) -> bool:
                self._combinators(instance, schema, path, errors)
                return False

            plan.append(check_combinators)
        return plan

    def _ref(self, instance: Any, ref: Any, path: Path) -> list[Err]:
        if not isinstance(ref, str):
            return [Err(path, "invalid $ref (expected a string)")]
        target, reason = self.resolve(ref)
        if reason is not None:
            return [Err(path, reason)]
        marker = (id(target), id(instance))
        if marker in self.active_refs:
            return [Err(path, f"$ref {show(ref, 80)} loops back to itself without consuming any of the value")]
        self.active_refs.add(marker)
        try:
            return self.check(instance, target, path)
        finally:
            self.active_refs.discard(marker)

    def _string(self, instance: str, schema: Mapping[str, Any], path: Path, errors: list[Err]) -> None:
        min_length = schema.get("minLength")
        if _is_number(min_length) and len(instance) < min_length:
            errors.append(Err(path, f"expected at least {min_length} characters, got {len(instance)}"))
        max_length = schema.get("maxLength")
        if _is_number(max_length) and len(instance) > max_length:
            errors.append(Err(path, f"expected at most {max_length} characters, got {len(instance)}"))
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            regex = _regex(pattern)
            if regex is None:
                errors.append(Err(path, f"schema pattern {show(pattern, 80)} is not a valid regular expression"))
            elif regex.search(instance) is None:
                errors.append(Err(path, f"expected a string matching {show(pattern, 80)}, got {show(instance)}"))

    def _number(self, instance: int | float, schema: Mapping[str, Any], path: Path, errors: list[Err]) -> None:
        minimum = schema.get("minimum")
        maximum = schema.get("maximum")
        exclusive_minimum = schema.get("exclusiveMinimum")
        exclusive_maximum = schema.get("exclusiveMaximum")
        # draft-04 spelled exclusivity as a boolean modifier of minimum/maximum
        if exclusive_minimum is True and _is_number(minimum):
            exclusive_minimum, minimum = minimum, None
        if exclusive_maximum is True and _is_number(maximum):
            exclusive_maximum, maximum = maximum, None
        for bound, symbol in ((minimum, ">="), (exclusive_minimum, ">"), (maximum, "<="), (exclusive_maximum, "<")):
            if not _is_number(bound):
                continue
            if symbol == ">=":
                ok = instance >= bound
            elif symbol == ">":
                ok = instance > bound
            elif symbol == "<=":
                ok = instance <= bound
            else:
                ok = instance < bound
            if not ok:
                errors.append(Err(path, f"expected a number {symbol} {show(bound)}, got {show(instance)}"))
        multiple_of = schema.get("multipleOf")
        if _is_number(multiple_of) and multiple_of > 0 and not _is_multiple(instance, multiple_of):
            errors.append(Err(path, f"expected a multiple of {show(multiple_of)}, got {show(instance)}"))

    def _object(self, instance: Mapping[Any, Any], schema: Mapping[str, Any], path: Path, errors: list[Err]) -> None:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            properties = {}
        required = schema.get("required")
        if isinstance(required, list):
            for name in required:
                if isinstance(name, str) and name not in instance:
                    errors.append(Err(path + (name,), "required property missing"))
        dependent_required = schema.get("dependentRequired")
        if isinstance(dependent_required, Mapping):
            for trigger, names in dependent_required.items():
                if trigger in instance and isinstance(names, list):
                    for name in names:
                        if isinstance(name, str) and name not in instance:
                            errors.append(
                                Err(path + (name,), f"required property missing (because {trigger!r} is present)")
                            )
        patterns = schema.get("patternProperties")
        if not isinstance(patterns, Mapping):
            patterns = {}
        additional = schema.get("additionalProperties", _MISSING)
        property_names = schema.get("propertyNames", _MISSING)
        for raw_key, value in instance.items():
            key = raw_key if isinstance(raw_key, str) else str(raw_key)
            where = path + (key,)
            matched = False
            if key in properties:
                matched = True
                errors.extend(self.check(value, properties[key], where))
            for pattern, subschema in patterns.items():
                regex = _regex(pattern) if isinstance(pattern, str) else None
                if regex is None:
                    errors.append(Err(path, f"schema pattern {show(pattern, 80)} is not a valid regular expression"))
                elif regex.search(key) is not None:
                    matched = True
                    errors.extend(self.check(value, subschema, where))
            if not matched and additional is not _MISSING:
                if additional is False:
                    errors.append(Err(where, "unexpected property"))
                else:
                    errors.extend(self.check(value, additional, where))
            if property_names is not _MISSING:
                for err in self.check(key, property_names, where):
                    errors.append(Err(where, f"invalid property name: {err.text()}"))
        min_properties = schema.get("minProperties")
        if _is_number(min_properties) and len(instance) < min_properties:
            errors.append(Err(path, f"expected at least {min_properties} properties, got {len(instance)}"))
        max_properties = schema.get("maxProperties")
        if _is_number(max_properties) and len(instance) > max_properties:
            errors.append(Err(path, f"expected at most {max_properties} properties, got {len(instance)}"))
        dependent_schemas = schema.get("dependentSchemas")
        if isinstance(dependent_schemas, Mapping):
            for trigger, subschema in dependent_schemas.items():
                if trigger in instance:
                    errors.extend(self.check(instance, subschema, path))

    def _array(
        self, instance: list[Any] | tuple[Any, ...], schema: Mapping[str, Any], path: Path, errors: list[Err]
    ) -> None:
        prefix = schema.get("prefixItems")
        rest = schema.get("items", _MISSING)
        if isinstance(rest, list):  # draft-07 tuple form
            prefix, rest = rest, schema.get("additionalItems", _MISSING)
        if not isinstance(prefix, list):
            prefix = []
        if rest is False and len(instance) > len(prefix):
            errors.append(Err(path, f"expected at most {len(prefix)} items, got {len(instance)}"))
            rest = _MISSING
        for index, item in enumerate(instance):
            if index < len(prefix):
                errors.extend(self.check(item, prefix[index], path + (index,)))
            elif rest is not _MISSING:
                errors.extend(self.check(item, rest, path + (index,)))
        min_items = schema.get("minItems")
        if _is_number(min_items) and len(instance) < min_items:
            errors.append(Err(path, f"expected at least {min_items} items, got {len(instance)}"))
        max_items = schema.get("maxItems")
        if _is_number(max_items) and len(instance) > max_items:
            errors.append(Err(path, f"expected at most {max_items} items, got {len(instance)}"))
        if schema.get("uniqueItems") is True:
            seen: dict[Hashable, int] = {}
            for index, item in enumerate(instance):
                first = seen.setdefault(self.key(item, path + (index,)), index)
                if first != index:
                    errors.append(Err(path, f"expected unique items, but items [{first}] and [{index}] are equal"))
                    break
        contains = schema.get("contains", _MISSING)
        if contains is not _MISSING:
            count = sum(1 for item in instance if not self.check(item, contains, path))
            low = schema.get("minContains", 1)
            high = schema.get("maxContains")
            if _is_number(low) and count < low:
                errors.append(Err(path, f"expected at least {low} items matching 'contains', got {count}"))
            if _is_number(high) and count > high:
                errors.append(Err(path, f"expected at most {high} items matching 'contains', got {count}"))

    def _combinators(self, instance: Any, schema: Mapping[str, Any], path: Path, errors: list[Err]) -> None:
        all_of = schema.get("allOf")
        if isinstance(all_of, list):
            for subschema in all_of:
                errors.extend(self.check(instance, subschema, path))
        any_of = schema.get("anyOf")
        if isinstance(any_of, list):
            failures: list[list[Err]] = []
            for subschema in any_of:
                found = self.check(instance, subschema, path)
                if not found:
                    break
                failures.append(found)
            else:
                errors.extend(
                    merge_alternatives(instance, path, failures, "anyOf")
                    if failures
                    else [Err(path, "anyOf has no alternatives")]
                )
        one_of = schema.get("oneOf")
        if isinstance(one_of, list):
            failures = []
            passed: list[int] = []
            for index, subschema in enumerate(one_of):
                found = self.check(instance, subschema, path)
                if found:
                    failures.append(found)
                else:
                    passed.append(index)
            if not passed:
                errors.extend(
                    merge_alternatives(instance, path, failures, "oneOf")
                    if failures
                    else [Err(path, "oneOf has no alternatives")]
                )
            elif len(passed) > 1:
                errors.append(
                    Err(
                        path, f"matches alternatives #{passed[0]} and #{passed[1]} of oneOf, but must match exactly one"
                    )
                )
        not_ = schema.get("not", _MISSING)
        if not_ is not _MISSING and not self.check(instance, not_, path):
            errors.append(Err(path, "must not match the schema under 'not'"))
        condition = schema.get("if", _MISSING)
        if condition is not _MISSING:
            branch = "then" if not self.check(instance, condition, path) else "else"
            if branch in schema:
                errors.extend(self.check(instance, schema[branch], path))


def _count_values(instance: Any, cap: int) -> int:
    """How many values (scalars, arrays, objects) ``instance`` holds, counting at most ``cap``."""
    count = 0
    stack = [instance]
    while stack and count < cap:
        value = stack.pop()
        count += 1
        if isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return count


def validate_errors(
    instance: Any, schema: Any, path: Path = (), *, max_depth: int = MAX_DEPTH, max_steps: int | None = None
) -> list[Err]:
    """Like ``validate()``, but returns error records relative to ``path`` (for the converters)."""
    if max_steps is None:
        max_steps = DEFAULT_MAX_STEPS + STEPS_PER_VALUE * _count_values(instance, 10_000_000)
    validator = _Validator(schema, max_depth, max_steps)
    try:
        return validator.check(instance, schema, path)
    except Abort as abort:
        return [Err(abort.path, abort.message)]
    except RecursionError:  # only reachable when the caller was already close to the interpreter's limit
        return [Err(path, "schema or value nested too deeply; giving up")]


def validate(instance: Any, schema: Any, *, max_depth: int = MAX_DEPTH, max_steps: int | None = None) -> list[str]:
    """Check a JSON value against a hand-written JSON Schema (2020-12); returns readable errors, ``[]`` if valid.

    Errors read ``$.filters.tags[2]: expected string, got 5``. Work and nesting are bounded, so hostile schemas
    (deep nesting, cyclic or remote ``$ref``) yield an error quickly instead of hanging or overflowing the stack:
    ``max_steps`` defaults to 100,000 plus 10 per value in ``instance``.
    """
    return render(validate_errors(instance, schema, max_depth=max_depth, max_steps=max_steps), "$")


def check_schema_bounded(schema: Any, *, max_depth: int = MAX_DEPTH, max_nodes: int = DEFAULT_MAX_NODES) -> None:
    """Raise ``ValueError`` if a schema document nests deeper than ``max_depth`` or is larger than ``max_nodes``.

    Meant for schemas received from a peer, before they are stored or used: it walks without recursion.
    """
    stack: list[tuple[Any, int]] = [(schema, 1)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise ValueError(f"schema is too large (more than {max_nodes} values)")
        if isinstance(node, Mapping):
            children: Any = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            continue
        if depth > max_depth:
            raise ValueError(f"schema nests more than {max_depth} levels deep")
        stack.extend((child, depth + 1) for child in children)
