"""The one converter between MCP wire dicts and the attrs classes of :mod:`trio_mcp.types`.

* camelCase wire names come from the field names (``mime_type`` -> ``mimeType``; ``meta`` -> ``_meta``), through a
  hook factory that builds each class's hooks once, with cattrs' ``make_dict_structure_fn`` /
  ``make_dict_unstructure_fn``;
* ``None`` is never written (fields that default to ``None`` are left out when they are ``None``);
* keys a class does not know land in its ``extra`` dict and are written back by :func:`to_wire`;
* content unions are dispatched on ``type`` by dictionary lookup; an unknown ``type`` becomes
  :class:`~trio_mcp.types.UnknownContent` and is written back verbatim;
* primitives are checked, not coerced: ``"1"`` is not an int, ``True`` is not a request id, ``1`` stays ``1`` in a
  float field (so numbers round-trip exactly);
* JSON values (``arguments``, schemas, ``_meta``, lists of strings) are checked at the top level and then shared,
  not copied, in both directions: treat the dicts you pass in and get back as read-only;
* failures raise :class:`WireFormatError` with messages such as ``missing required field @ $.ref.name``; no
  ``ExceptionGroup`` leaves this module.
"""

import re
import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, overload

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.fns import identity
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from ..errors import INVALID_PARAMS, McpError
from ..types import (
    CONTENT_TYPES,
    INPUT_REQUEST_TYPES,
    SAMPLING_CONTENT_TYPES,
    BlobResourceContents,
    BooleanSchema,
    CompletionReference,
    ContentBlock,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    EnumSchema,
    InputRequest,
    InputResponse,
    LegacyTitledEnumSchema,
    ListRootsResult,
    MultiSelectEnumSchema,
    NumberSchema,
    PrimitiveSchemaDefinition,
    PromptReference,
    RequestId,
    ResourceContents,
    ResourceTemplateReference,
    SamplingContent,
    SamplingMessageContent,
    SingleSelectEnumSchema,
    StringSchema,
    TextResourceContents,
    TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    UnknownContent,
    UnknownInputRequest,
    UntitledMultiSelectEnumSchema,
    UntitledSingleSelectEnumSchema,
    WireType,
)

__all__ = [
    "WireFormatError",
    "converter",
    "to_wire",
    "from_wire",
    "params_from_wire",
    "wire_name",
    "describe_error",
]

T = TypeVar("T")
_NoneType = type(None)
_Hook = Callable[[Any, Any], Any]
_UnHook = Callable[[Any], Any]


class WireFormatError(ValueError):
    """A wire value does not fit the class it was read into.

    ``errors`` lists every problem as ``"<what> @ <JSON path>"``; the message joins them with ``"; "``.
    """

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class _Invalid(Exception):
    """Raised by this module's hooks: ``message`` describes the problem, ``where`` extends the path."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where


#: The converter. Detailed validation is on: errors carry the path to the offending value.
converter = cattrs.Converter(detailed_validation=True)


def _structure_hook(t: Any) -> _Hook:
    """``converter.get_structure_hook`` (cattrs 24.1+), with the equivalent dispatch lookup for older cattrs."""
    get = getattr(converter, "get_structure_hook", None)
    if get is not None:
        hook: _Hook = get(t)
    else:  # pragma: no cover - cattrs < 24.1
        dispatch: Any = converter._structure_func
        hook = dispatch.dispatch(t)
    return hook


def _unstructure_hook(t: Any) -> _UnHook:
    """``converter.get_unstructure_hook`` (cattrs 24.1+), with the equivalent dispatch lookup for older cattrs."""
    get = getattr(converter, "get_unstructure_hook", None)
    if get is not None:
        hook: _UnHook = get(t)
    else:  # pragma: no cover - cattrs < 24.1
        dispatch: Any = converter._unstructure_func
        hook = dispatch.dispatch(t)
    return hook


def wire_name(field_name: str) -> str:
    """The wire key of a field: camelCase of the snake_case name; ``meta`` is ``_meta``."""
    if field_name == "meta":
        return "_meta"
    head, *rest = field_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# --- type inspection -------------------------------------------------------------------------------------------


def _origin(t: Any) -> Any:
    return get_origin(t)


def _is_union(t: Any) -> bool:
    return _origin(t) in (Union, types.UnionType)


def _members(t: Any) -> frozenset[Any]:
    """The members of a union other than ``None``."""
    return frozenset(a for a in get_args(t) if a is not _NoneType)


def _is_plain_json(t: Any) -> bool:
    """True when values of ``t`` are already JSON and need no conversion on the way out."""
    if t in (str, int, float, bool, Any, _NoneType):
        return True
    origin = _origin(t)
    if origin is Literal:
        return True
    if origin is list:
        return _is_plain_json(get_args(t)[0])
    if origin is dict:
        return _is_plain_json(get_args(t)[1])
    if _is_union(t):
        return all(_is_plain_json(a) for a in get_args(t))
    return False


def _is_wire_class(t: Any) -> bool:
    return isinstance(t, type) and issubclass(t, WireType)


# --- primitives: check, never coerce ---------------------------------------------------------------------------


def _structure_str(v: Any, _: Any) -> str:
    if isinstance(v, str):
        return v
    raise _Invalid("expected string")


def _structure_int(v: Any, _: Any) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    raise _Invalid("expected int")


def _structure_float(v: Any, _: Any) -> float:
    # An int stays an int, so ``"progress": 50`` is written back as 50, not 50.0.
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return v
    raise _Invalid("expected number")


def _structure_bool(v: Any, _: Any) -> bool:
    if v is True or v is False:
        return v
    raise _Invalid("expected boolean")


def _structure_request_id(v: Any, _: Any) -> str | int:
    if isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    raise _Invalid("expected string or int")


converter.register_structure_hook(str, _structure_str)
converter.register_structure_hook(int, _structure_int)
converter.register_structure_hook(float, _structure_float)
converter.register_structure_hook(bool, _structure_bool)
for _t in (str, int, float, bool):
    converter.register_unstructure_hook(_t, identity)


def _literal_structure_factory(t: Any) -> _Hook:
    allowed = get_args(t)
    expected = "expected " + (
        repr(allowed[0]) if len(allowed) == 1 else "one of " + ", ".join(repr(a) for a in allowed)
    )

    if all(type(a) is str for a in allowed):
        allowed_strings = frozenset(allowed)

        def structure_str_literal(v: Any, _: Any) -> Any:
            if isinstance(v, str) and v in allowed_strings:
                return v
            raise _Invalid(expected)

        return structure_str_literal

    def structure_literal(v: Any, _: Any) -> Any:
        # The type check keeps ``True`` from matching a ``Literal[1]``.
        if v in allowed and any(type(v) is type(a) for a in allowed):
            return v
        raise _Invalid(expected)

    return structure_literal


converter.register_structure_hook_factory(lambda t: _origin(t) is Literal, _literal_structure_factory)
converter.register_unstructure_hook_factory(lambda t: _origin(t) is Literal, lambda t: identity)


# --- containers ------------------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _add_note(exc: BaseException, note: str) -> None:
    # ``BaseException.add_note`` is 3.11+; cattrs reads ``__notes__`` directly, so set it the portable way.
    setattr(exc, "__notes__", [*getattr(exc, "__notes__", []), note])  # noqa: B010 (typeshed lacks __notes__ on 3.10)


def _list_structure_factory(t: Any) -> _Hook:
    (elem,) = get_args(t) or (Any,)
    if elem is Any:

        def structure_any_list(v: Any, _: Any) -> list[Any]:
            if isinstance(v, list):
                return v
            raise _Invalid("expected array")

        return structure_any_list
    if elem is str:

        def structure_str_list(v: Any, _: Any) -> list[str]:
            if not isinstance(v, list):
                raise _Invalid("expected array")
            for i, item in enumerate(v):
                if not isinstance(item, str):
                    raise _Invalid("expected string", f"[{i}]")
            return v

        return structure_str_list

    elem_hook = _structure_hook(elem)

    def structure_list(v: Any, _: Any) -> list[Any]:
        if not isinstance(v, list):
            raise _Invalid("expected array")
        out = []
        errors: list[Exception] = []
        for i, item in enumerate(v):
            try:
                out.append(elem_hook(item, elem))
            except Exception as exc:
                _add_note(exc, IterableValidationNote(f"index {i}", i, elem))
                errors.append(exc)
        if errors:
            raise IterableValidationError("while structuring a list", errors, t)
        return out

    return structure_list


def _dict_structure_factory(t: Any) -> _Hook:
    key, value = get_args(t) or (str, Any)
    if value is Any:

        def structure_json_object(v: Any, _: Any) -> dict[str, Any]:
            if isinstance(v, dict):
                return v
            raise _Invalid("expected object")

        return structure_json_object
    if value is str:

        def structure_str_dict(v: Any, _: Any) -> dict[str, str]:
            if not isinstance(v, dict):
                raise _Invalid("expected object")
            for k, item in v.items():
                if not isinstance(item, str):
                    raise _Invalid("expected string", _key_path(k))
            return v

        return structure_str_dict

    value_hook = _structure_hook(value)

    def structure_dict(v: Any, _: Any) -> dict[str, Any]:
        if not isinstance(v, dict):
            raise _Invalid("expected object")
        out = {}
        errors: list[Exception] = []
        for k, item in v.items():
            try:
                out[k] = value_hook(item, value)
            except Exception as exc:
                _add_note(exc, IterableValidationNote(f"key {k!r}", k, value))
                errors.append(exc)
        if errors:
            raise IterableValidationError("while structuring a mapping", errors, t)
        return out

    return structure_dict


def _list_unstructure_factory(t: Any) -> _UnHook:
    (elem,) = get_args(t) or (Any,)
    if _is_plain_json(elem):
        return identity
    elem_hook = _unstructure_hook(elem)

    def unstructure_list(v: list[Any]) -> list[Any]:
        return [elem_hook(item) for item in v]

    return unstructure_list


def _dict_unstructure_factory(t: Any) -> _UnHook:
    _, value = get_args(t) or (str, Any)
    if _is_plain_json(value):
        return identity
    value_hook = _unstructure_hook(value)

    def unstructure_dict(v: dict[str, Any]) -> dict[str, Any]:
        return {k: value_hook(item) for k, item in v.items()}

    return unstructure_dict


converter.register_structure_hook_factory(lambda t: _origin(t) is list, _list_structure_factory)
converter.register_structure_hook_factory(lambda t: _origin(t) is dict, _dict_structure_factory)
converter.register_unstructure_hook_factory(lambda t: _origin(t) is list, _list_unstructure_factory)
converter.register_unstructure_hook_factory(lambda t: _origin(t) is dict, _dict_unstructure_factory)


# --- wire classes ----------------------------------------------------------------------------------------------

#: class -> {python field name: wire key}; used to report errors with wire names.
_WIRE_NAMES: dict[type, dict[str, str]] = {}
#: class -> unstructure hook, for the fast paths of ``to_wire`` and union members.
_UNSTRUCTURE_BY_CLASS: dict[type, _UnHook] = {}


def _wire_names(cls: type) -> dict[str, str]:
    names = _WIRE_NAMES.get(cls)
    if names is None:
        names = {a.name: wire_name(a.name) for a in attrs.fields(cls) if a.name != "extra"}
        _WIRE_NAMES[cls] = names
    return names


def _structure_raw(cls: type) -> _Hook:
    def structure_raw(v: Any, _: Any) -> Any:
        if not isinstance(v, dict):
            raise _Invalid("expected object")
        return cls(raw=v)

    return structure_raw


def _class_structure_factory(cls: type) -> _Hook:
    if cls is UnknownContent or cls is UnknownInputRequest:
        return _structure_raw(cls)
    names = _wire_names(cls)
    overrides: dict[str, Any] = {"extra": override(omit=True)}
    for name, key in names.items():
        overrides[name] = override(rename=key)
    base: _Hook = make_dict_structure_fn(cls, converter, **overrides)
    known = frozenset(names.values())
    set_attr = object.__setattr__

    def structure_wire_class(v: Any, _: Any) -> Any:
        if not isinstance(v, dict):
            raise _Invalid("expected object")
        instance = base(v, cls)
        if not known.issuperset(v):
            set_attr(instance, "extra", {k: item for k, item in v.items() if k not in known})
        return instance

    return structure_wire_class


def _field_unstructure_hook(t: Any) -> _UnHook:
    if _is_plain_json(t):
        return identity
    return _unstructure_hook(t)


def _class_unstructure_factory(cls: type) -> _UnHook:
    if cls is UnknownContent or cls is UnknownInputRequest:

        def unstructure_raw(obj: Any) -> Any:
            return obj.raw

        _UNSTRUCTURE_BY_CLASS[cls] = unstructure_raw
        return unstructure_raw
    overrides: dict[str, Any] = {"extra": override(omit=True)}
    for a in attrs.fields(cls):
        if a.name == "extra":
            continue
        overrides[a.name] = override(
            rename=wire_name(a.name),
            # Only ``None`` defaults are left out; a default tag such as ``type="text"`` is always written.
            omit_if_default=a.default is None,
            unstruct_hook=_field_unstructure_hook(a.type),
        )
    base: _UnHook = make_dict_unstructure_fn(cls, converter, **overrides)

    def unstructure_wire_class(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = base(obj)
        extra = obj.extra
        if extra:
            for k, item in extra.items():
                if k not in out:
                    out[k] = item
        return out

    _UNSTRUCTURE_BY_CLASS[cls] = unstructure_wire_class
    return unstructure_wire_class


converter.register_structure_hook_factory(_is_wire_class, _class_structure_factory)
converter.register_unstructure_hook_factory(_is_wire_class, _class_unstructure_factory)


# --- unions ----------------------------------------------------------------------------------------------------


def _tag_dispatcher(field: str, table: dict[str, type], unknown: type | None, allowed: str) -> _Hook:
    """Dispatch on a string tag; unknown tags become ``unknown`` (or an error when there is none)."""
    hooks: dict[str, _Hook] = {}

    def structure_tagged(v: Any, _: Any) -> Any:
        if not isinstance(v, dict):
            raise _Invalid("expected object")
        tag = v.get(field)
        hook = hooks.get(tag) if isinstance(tag, str) else None
        if hook is None:
            if field not in v:
                raise _Invalid("missing required field", "." + field)
            if not isinstance(tag, str):
                raise _Invalid("expected string", "." + field)
            cls = table.get(tag)
            if cls is None:
                if unknown is None:
                    raise _Invalid(f"expected {allowed}", "." + field)
                return unknown(raw=v)
            hook = hooks[tag] = _structure_hook(cls)
            return hook(v, cls)
        return hook(v, None)

    return structure_tagged


def _sampling_message_content(v: Any, _: Any) -> Any:
    if isinstance(v, list):
        return _structure_hook(list[SamplingContent])(v, None)
    return _sampling_content(v, None)


def _resource_contents(v: Any, _: Any) -> Any:
    if not isinstance(v, dict):
        raise _Invalid("expected object")
    if "text" in v:
        return _structure_hook(TextResourceContents)(v, TextResourceContents)
    if "blob" in v:
        return _structure_hook(BlobResourceContents)(v, BlobResourceContents)
    raise _Invalid("expected a text or blob field")


def _elicit_params(v: Any, _: Any) -> Any:
    if not isinstance(v, dict):
        raise _Invalid("expected object")
    mode = v.get("mode")
    if mode == "url":
        return _structure_hook(ElicitRequestURLParams)(v, ElicitRequestURLParams)
    if mode is None or mode == "form":
        return _structure_hook(ElicitRequestFormParams)(v, ElicitRequestFormParams)
    raise _Invalid("expected 'form' or 'url'", ".mode")


def _input_response(v: Any, _: Any) -> Any:
    if not isinstance(v, dict):
        raise _Invalid("expected object")
    if "action" in v:
        return _structure_hook(ElicitResult)(v, ElicitResult)
    if "roots" in v:
        return _structure_hook(ListRootsResult)(v, ListRootsResult)
    if "model" in v or "role" in v or "content" in v:
        return _structure_hook(CreateMessageResult)(v, CreateMessageResult)
    raise _Invalid("expected an elicitation, roots or sampling result")


def _primitive_schema_class(v: dict[str, Any]) -> type | None:
    kind = v.get("type")
    if kind == "string":
        if "oneOf" in v:
            return TitledSingleSelectEnumSchema
        if "enum" in v:
            return LegacyTitledEnumSchema if "enumNames" in v else UntitledSingleSelectEnumSchema
        return StringSchema
    if kind in ("number", "integer"):
        return NumberSchema
    if kind == "boolean":
        return BooleanSchema
    if kind == "array":
        items = v.get("items")
        if isinstance(items, dict) and "anyOf" in items:
            return TitledMultiSelectEnumSchema
        return UntitledMultiSelectEnumSchema
    return None


def _primitive_schema_dispatcher(members: frozenset[Any]) -> _Hook:
    def structure_primitive_schema(v: Any, _: Any) -> Any:
        if not isinstance(v, dict):
            raise _Invalid("expected object")
        cls = _primitive_schema_class(v)
        if cls is None or cls not in members:
            raise _Invalid("unsupported property schema", ".type")
        return _structure_hook(cls)(v, cls)

    return structure_primitive_schema


_content = _tag_dispatcher("type", CONTENT_TYPES, UnknownContent, "a content type")
_sampling_content = _tag_dispatcher("type", SAMPLING_CONTENT_TYPES, UnknownContent, "a content type")

#: union members (``None`` excluded) -> structure hook, for the unions the schema leaves to us.
_UNION_HOOKS: dict[frozenset[Any], _Hook] = {
    _members(RequestId): _structure_request_id,
    _members(ContentBlock): _content,
    _members(SamplingContent): _sampling_content,
    _members(SamplingMessageContent): _sampling_message_content,
    _members(ResourceContents): _resource_contents,
    _members(ElicitRequestParams): _elicit_params,
    _members(CompletionReference): _tag_dispatcher(
        "type",
        {"ref/prompt": PromptReference, "ref/resource": ResourceTemplateReference},
        None,
        "'ref/prompt' or 'ref/resource'",
    ),
    _members(InputRequest): _tag_dispatcher("method", INPUT_REQUEST_TYPES, UnknownInputRequest, "an input request"),
    _members(InputResponse): _input_response,
}
for _alias in (PrimitiveSchemaDefinition, EnumSchema, SingleSelectEnumSchema, MultiSelectEnumSchema):
    _UNION_HOOKS[_members(_alias)] = _primitive_schema_dispatcher(_members(_alias))


def _union_structure_factory(t: Any) -> _Hook:
    members = _members(t)
    hook = _UNION_HOOKS.get(members)
    if hook is None:
        if len(members) != 1:
            raise TypeError(f"trio_mcp has no structure hook for the union {t!r}")
        (only,) = members
        hook = _structure_hook(only)
        inner, target = hook, only

        def structure_optional(v: Any, _: Any) -> Any:
            return None if v is None else inner(v, target)

        return structure_optional
    if _NoneType in get_args(t):
        tagged = hook

        def structure_optional_union(v: Any, _: Any) -> Any:
            return None if v is None else tagged(v, None)

        return structure_optional_union
    return hook


def _unstructure_by_class(obj: Any) -> Any:
    hook = _UNSTRUCTURE_BY_CLASS.get(obj.__class__)
    if hook is None:
        if obj is None or isinstance(obj, (str, int, float, bool, list, dict)):
            return obj
        hook = _unstructure_hook(obj.__class__)
    return hook(obj)


def _union_unstructure_factory(t: Any) -> _UnHook:
    if _is_plain_json(t):
        return identity
    members = _members(t)
    if len(members) == 1:
        (only,) = members
        inner = _unstructure_hook(only)

        def unstructure_optional(v: Any) -> Any:
            return None if v is None else inner(v)

        return unstructure_optional
    if _members(SamplingMessageContent) == members:

        def unstructure_sampling_message_content(v: Any) -> Any:
            if isinstance(v, list):
                return [_unstructure_by_class(item) for item in v]
            return _unstructure_by_class(v)

        return unstructure_sampling_message_content
    return _unstructure_by_class


converter.register_structure_hook_factory(_is_union, _union_structure_factory)
converter.register_unstructure_hook_factory(_is_union, _union_unstructure_factory)


# --- errors ----------------------------------------------------------------------------------------------------


def _key_path(key: Any) -> str:
    if isinstance(key, str) and _IDENTIFIER.match(key):
        return "." + key
    return f"[{key!r}]"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, _Invalid):
        return exc.message
    if isinstance(exc, KeyError):
        return "missing required field"
    return f"invalid value ({exc})"


def _walk(exc: BaseException, path: str, out: list[str]) -> None:
    if isinstance(exc, ClassValidationError):
        names = _wire_names(exc.cl) if _is_wire_class(exc.cl) else {}
        for sub in exc.exceptions:
            note = next((n for n in getattr(sub, "__notes__", ()) if isinstance(n, AttributeValidationNote)), None)
            if note is None:
                _walk(sub, path, out)
            else:
                _walk(sub, f"{path}.{names.get(note.name, note.name)}", out)
    elif isinstance(exc, IterableValidationError):
        for sub in exc.exceptions:
            inote = next((n for n in getattr(sub, "__notes__", ()) if isinstance(n, IterableValidationNote)), None)
            if inote is None:
                _walk(sub, path, out)
            elif isinstance(inote.index, int):
                _walk(sub, f"{path}[{inote.index}]", out)
            else:
                _walk(sub, path + _key_path(inote.index), out)
    elif isinstance(exc, _Invalid):
        out.append(f"{exc.message} @ {path}{exc.where}")
    else:
        out.append(f"{_describe(exc)} @ {path}")


def describe_error(exc: BaseException) -> list[str]:
    """Flatten a structuring failure into ``"<what> @ <JSON path>"`` strings (wire names, ``$`` = the root)."""
    out: list[str] = []
    _walk(exc, "$", out)
    return out


# --- the public functions --------------------------------------------------------------------------------------

_STRUCTURE_BY_TYPE: dict[Any, _Hook] = {}


def to_wire(obj: Any) -> dict[str, Any]:
    """Serialise a wire object to a JSON-ready dict: camelCase keys, ``None`` left out, ``extra`` merged back."""
    hook = _UNSTRUCTURE_BY_CLASS.get(obj.__class__)
    if hook is None:
        hook = _unstructure_hook(obj.__class__)
    result: dict[str, Any] = hook(obj)
    return result


@overload
def from_wire(data: Any, cls: type[T]) -> T: ...
@overload
def from_wire(data: Any, cls: Any) -> Any: ...
def from_wire(data: Any, cls: Any) -> Any:
    """Read ``data`` (parsed JSON) as ``cls``, a wire class or one of the union aliases of :mod:`trio_mcp.types`.

    ``None`` counts as ``{}``, so absent params give an instance when every field is optional.

    Raises:
        WireFormatError: with one ``"<what> @ <path>"`` entry per problem.
    """
    hook = _STRUCTURE_BY_TYPE.get(cls)
    if hook is None:
        hook = _STRUCTURE_BY_TYPE[cls] = _structure_hook(cls)
    if data is None and (_is_wire_class(cls) or cls == ElicitRequestParams):
        data = {}
    try:
        return hook(data, cls)
    except Exception as exc:
        raise WireFormatError(describe_error(exc)) from None


@overload
def params_from_wire(data: Any, cls: type[T]) -> T: ...
@overload
def params_from_wire(data: Any, cls: Any) -> Any: ...
def params_from_wire(data: Any, cls: Any) -> Any:
    """Like :func:`from_wire`, for inbound request params: failures become a JSON-RPC ``-32602``.

    Raises:
        McpError: ``INVALID_PARAMS``, with ``data={"errors": [...]}``.
    """
    try:
        return from_wire(data, cls)
    except WireFormatError as exc:
        raise McpError(INVALID_PARAMS, f"Invalid params: {exc}", data={"errors": exc.errors}) from None
