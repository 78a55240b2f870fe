"""Describe a Python function as an MCP tool: input/output JSON Schemas, argument binding, result dumping."""

from __future__ import annotations

import copy
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from .._core.mcp_headers import HeaderRuleError, header_paths
from ._compile import Compiler, resolve_hints
from ._docstrings import parse_docstring
from ._field import JS_SAFE_INTEGER, Field
from ._nodes import (
    FAIL,
    NO_DEFAULT,
    AnnotatedNode,
    BoolNode,
    FloatNode,
    IntNode,
    Node,
    Run,
    SchemaContext,
    StrNode,
    dump_any,
    property_schema,
    suggest,
)
from ._util import Abort, Err, expected_message, render
from ._validator import check_schema_bounded, validate_errors

__all__ = ["ArgumentError", "OutputError", "FunctionSchema", "describe_function"]

_HEADER_TYPES: Final = ("string", "integer", "boolean")
_EMPTY: Final[Any] = inspect.Parameter.empty


class ArgumentError(ValueError):
    """Tool arguments that do not fit the tool's input schema; ``errors`` has one line per problem, with its path.

    The message joins them, e.g. ``city: required argument missing; limit: expected integer, got string '10x'``.
    """

    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class OutputError(ValueError):
    """A tool's return value that does not fit its declared return type (a bug in the tool, not in the caller)."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("return value does not match the declared output schema: " + "; ".join(errors))
        self.errors = errors


#: The nodes whose ``convert`` returns a value of exactly this type as it is (not a bool for an int: bool is its own).
_TAKEN_AS_THEY_ARE: Final[dict[type[Node], type]] = {StrNode: str, IntNode: int, FloatNode: float, BoolNode: bool}


@attrs.frozen
class _Param:
    name: str
    node: Node
    required: bool
    default: Any
    #: The type whose values ``node`` converts to themselves with no error: such an argument needs no conversion.
    exact: type | None = attrs.field(
        init=False, default=attrs.Factory(lambda self: _TAKEN_AS_THEY_ARE.get(type(self.node)), takes_self=True)
    )


def _never(annotation: Any) -> bool:
    return False


@attrs.frozen(eq=False)
class FunctionSchema:
    """What a tool's signature means on the wire: its schemas, and how arguments and results cross over.

    Build it with ``describe_function()``. ``input_schema``/``output_schema`` are what ``tools/list`` shows;
    ``bind()`` turns received arguments into keyword arguments, ``dump_output()`` turns a result into
    ``structuredContent``. Parameters in ``skipped`` are the caller's to inject; ``headers`` maps each
    ``x-mcp-header`` name to its parameter.
    """

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wraps_output: bool
    skipped: tuple[str, ...] = ()
    description: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)
    _params: tuple[_Param, ...] = ()
    _output_node: Node | None = None
    _explicit_input: bool = False
    #: The parameters' names, in order (to name the one an unexpected argument may have meant).
    _names: tuple[str, ...] = attrs.field(
        init=False, default=attrs.Factory(lambda self: tuple(param.name for param in self._params), takes_self=True)
    )
    #: The same as a set: whether every argument is a parameter is one test, not a count per parameter.
    _name_set: frozenset[str] = attrs.field(
        init=False, default=attrs.Factory(lambda self: frozenset(self._names), takes_self=True)
    )

    def bind(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Validate JSON ``arguments`` and convert them to keyword arguments of the annotated types.

        Defaults are filled in. Raises ``ArgumentError`` listing every problem (missing, unknown or ill-typed
        arguments, with paths such as ``filters.tags[2]``). With a hand-written input schema the values are only
        validated, and passed on as they are.
        """
        if arguments is None:
            arguments = {}
        if self._explicit_input:
            errors = [_argument_wording(err) for err in validate_errors(arguments, self.input_schema)]
            if errors:
                raise ArgumentError(render(errors, "arguments", prefixed=False))
            return dict(arguments)
        if type(arguments) is not dict and not isinstance(arguments, Mapping):  # dict: no ABC check, every call
            raise ArgumentError([f"arguments: {expected_message(['object'], arguments)}"])
        # Made at the first argument that needs converting or is wrong: none when each is of its parameter's exact
        # type (most calls).
        run: Run | None = None
        bound: dict[str, Any] = {}
        try:
            for param in self._params:
                name = param.name
                if name in arguments:
                    value = arguments[name]
                    if type(value) is param.exact:  # e.g. a str for a str parameter: taken as it is
                        bound[name] = value
                        continue
                    run = run or Run()
                    value = param.node.convert(value, (name,), run)
                    if value is not FAIL:
                        bound[name] = value
                elif param.required:
                    run = run or Run()
                    run.fail(Err((name,), "required argument missing"))
                else:
                    bound[name] = param.default
        except Abort as abort:
            raise ArgumentError(render([Err(abort.path, abort.message)], "arguments", prefixed=False)) from None
        except RecursionError:  # only when the caller was already deep in the stack
            raise ArgumentError(["arguments: nested too deeply"]) from None
        if not self._name_set.issuperset(arguments):
            names = self._names
            run = run or Run()
            for key in arguments:
                if key not in names:
                    run.fail(Err((str(key),), "unexpected argument" + suggest(key, names)))
        if run is not None and run.errors:
            raise ArgumentError(render(run.errors, "arguments", prefixed=False))
        return bound

    def dump_output(self, value: Any) -> Any:
        """A tool's return value as JSON ``structuredContent`` (wrapped as ``{"result": ...}`` if ``wraps_output``).

        Raises ``OutputError`` when the value does not fit the declared return type or output schema.
        """
        run = Run()
        try:
            if self._output_node is not None:
                dumped = self._output_node.dump(value, (), run)
            else:
                dumped = dump_any(value, (), run)
                if not run.errors and self.output_schema is not None:
                    run.errors.extend(validate_errors(dumped, self.output_schema))
        except Abort as abort:
            raise OutputError(render([Err(abort.path, abort.message)], "result")) from None
        except RecursionError:  # only when the caller was already deep in the stack
            raise OutputError(["result: nested too deeply"]) from None
        if run.errors or dumped is FAIL:
            raise OutputError(render(run.errors, "result"))
        return {"result": dumped} if self.wraps_output else dumped


def _argument_wording(err: Err) -> Err:
    if len(err.path) == 1 and err.message == "required property missing":
        return err._replace(message="required argument missing")
    if len(err.path) == 1 and err.message == "unexpected property":
        return err._replace(message="unexpected argument")
    return err


def _callable_name(fn: Any) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__qualname__
    return f"{name}()"


def _target(fn: Any) -> Any:
    """The plain function behind partials, bound methods, decorators and callable objects."""
    while True:
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif inspect.ismethod(fn):
            fn = fn.__func__
        elif isinstance(fn, (staticmethod, classmethod)):
            fn = fn.__func__
        elif inspect.isclass(fn):
            fn = fn.__init__
        elif not inspect.isfunction(fn) and not inspect.isbuiltin(fn) and callable(fn) and hasattr(fn, "__call__"):
            call = type(fn).__call__
            if call is fn:  # pragma: no cover - defensive
                return fn
            fn = call
        else:
            return inspect.unwrap(fn)


_SHIM_CODE = (lambda: None).__code__


def _resolve(annotation: Any, globalns: dict[str, Any], where: str) -> Any:
    """Evaluate one (possibly string) annotation the way ``get_type_hints`` would, without implicit Optional."""
    shim = types.FunctionType(_SHIM_CODE, globalns)
    shim.__annotations__ = {"value": annotation}
    return resolve_hints(shim, where)["value"]


def _strip_annotated(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _header_of(tp: Any) -> str | None:
    if typing.get_origin(tp) is not typing.Annotated:
        return None
    headers = [meta.header for meta in tp.__metadata__ if isinstance(meta, Field) and meta.header is not None]
    return headers[-1] if headers else None


def _check_header(where: str, header: str, schema: Mapping[str, Any], seen: dict[str, str], owner: str) -> None:
    """Enforce the x-mcp-header rules that depend on the property: its type, and unique names."""
    kind = schema.get("type")
    if kind not in _HEADER_TYPES:
        raise TypeError(
            f"{where}: Field(header={header!r}) needs a str, int or bool parameter (x-mcp-header is only "
            f"allowed on string, integer and boolean properties; this one has type {kind!r}); for an "
            "optional header give the parameter a default instead of making it Optional"
        )
    if header.lower() in seen:
        raise TypeError(
            f"{where}: x-mcp-header {header!r} is already used by parameter {seen[header.lower()]!r} "
            "(header names are case-insensitive)"
        )
    seen[header.lower()] = owner


def _check_object_schema(schema: Any, what: str) -> dict[str, Any]:
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise TypeError(f'{what} must be a JSON Schema object with "type": "object" at the top')
    check_schema_bounded(schema)
    return copy.deepcopy(schema)


def describe_function(
    fn: Callable[..., Any],
    *,
    skip: Callable[[Any], bool] = _never,
    unstructured: Callable[[Any], bool] = _never,
    structured: bool = True,
    input_schema: dict[str, Any] | None = None,
    output_schema: dict[str, Any] | None = None,
) -> FunctionSchema:
    """Inspect a tool function (sync or async, partials and bound methods welcome) and describe it.

    ``skip(annotation)`` marks parameters the caller injects (left out of the schema, named in ``skipped``);
    ``unstructured(annotation)`` marks return types that are content rather than structured output; without
    ``structured`` every return type is (resources, prompts).
    ``input_schema``/``output_schema`` replace the generated schemas verbatim. Raises ``TypeError`` for anything
    the schema cannot express (``*args``, unsupported annotations, bad ``x-mcp-header`` use) at declaration time.
    """
    name = _callable_name(fn)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name}: cannot read the signature ({exc})") from None
    target = _target(fn)
    globalns: dict[str, Any] = getattr(target, "__globals__", None) or {}
    summary, param_docs = parse_docstring(inspect.getdoc(target) if target is not None else None)

    explicit_input = input_schema is not None
    if input_schema is not None:
        input_schema = _check_object_schema(input_schema, f"{name}: input_schema")
    compiler = Compiler()
    ctx = SchemaContext()
    params: list[_Param] = []
    properties: dict[str, Any] = {}
    skipped: list[str] = []
    headers: dict[str, str] = {}
    seen_headers: dict[str, str] = {}

    for param in signature.parameters.values():
        where = f"parameter {param.name!r} of {name}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            if explicit_input:
                continue
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise TypeError(
                f"{where}: {star}{param.name} cannot be described by a JSON Schema; declare each "
                "argument as a named parameter (or pass input_schema=... and read them yourself)"
            )
        annotation: Any = Any
        if param.annotation is not _EMPTY:
            try:
                annotation = _resolve(param.annotation, globalns, where)
            except TypeError:
                if skip(param.annotation):  # e.g. a context type imported only under TYPE_CHECKING
                    skipped.append(param.name)
                    continue
                raise
            if skip(annotation) or skip(_strip_annotated(annotation)):
                skipped.append(param.name)
                continue
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{where}: positional-only parameters cannot be passed by name; remove the '/'")
        if explicit_input:
            continue
        node = compiler.compile(annotation, where, header_ok=True)
        default = NO_DEFAULT if param.default is _EMPTY else param.default
        schema = property_schema(node, ctx, default, param_docs.get(param.name))
        header = _header_of(annotation)
        if header is not None:
            _check_header(where, header, schema, seen_headers, param.name)
            headers[header] = param.name
            if schema.get("type") == "integer":  # header integers must survive JavaScript clients
                bounds: dict[str, Any] = {}
                if "minimum" not in schema and "exclusiveMinimum" not in schema:
                    bounds["minimum"] = -JS_SAFE_INTEGER
                if "maximum" not in schema and "exclusiveMaximum" not in schema:
                    bounds["maximum"] = JS_SAFE_INTEGER
                if bounds:
                    schema.update(bounds)
                    node = AnnotatedNode(node, [Field(**bounds)])
        properties[param.name] = schema
        params.append(_Param(param.name, node, param.default is _EMPTY, default))

    if input_schema is not None:
        try:
            for header, path in header_paths(input_schema).items():
                headers[header] = ".".join(path)
        except HeaderRuleError as exc:
            raise TypeError(f"{name}: input_schema: {exc}") from None
    else:
        root: dict[str, Any] = {"type": "object", "properties": properties}
        required = [param.name for param in params if param.required]
        if required:
            root["required"] = required
        root["additionalProperties"] = False
        input_schema = ctx.finish(root)

    output_node: Node | None = None
    wraps_output = False
    if output_schema is not None:
        output_schema = _check_object_schema(output_schema, f"{name}: output_schema")
    elif signature.return_annotation is not _EMPTY:
        returns = _resolve(signature.return_annotation, globalns, f"return annotation of {name}")
        bare = _strip_annotated(returns)
        if structured and not (
            bare is None or bare is type(None) or bare is str or unstructured(returns) or unstructured(bare)
        ):
            output_node = Compiler().compile(returns, f"return annotation of {name}")
            out_ctx = SchemaContext()
            if output_node.is_object:
                output_schema = out_ctx.finish(output_node.schema(out_ctx))
            else:
                wraps_output = True
                output_schema = out_ctx.finish(
                    {
                        "type": "object",
                        "properties": {"result": output_node.schema(out_ctx)},
                        "required": ["result"],
                        "additionalProperties": False,
                    }
                )

    return FunctionSchema(
        input_schema=input_schema,
        output_schema=output_schema,
        wraps_output=wraps_output,
        skipped=tuple(skipped),
        description=summary,
        headers=headers,
        params=tuple(params),
        output_node=output_node,
        explicit_input=explicit_input,
    )
