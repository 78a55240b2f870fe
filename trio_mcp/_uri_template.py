"""RFC 6570 URI templates (levels 1-3, plus ``*`` and ``:n``) for MCP resource templates.

``UriTemplate.expand`` follows RFC 6570 section 3.  ``UriTemplate.match`` inverts it for ``resources/read``;
expansion is not injective, so matching picks one reading by these rules:

* **One left-to-right scan, no backtracking.**  Literals must appear verbatim (in expanded, percent-encoded
  form).  An expression captures up to the *first* occurrence of what follows it: the next literal, the
  leading character of a following ``{/x}``, ``{.x}``, ``{?x}``... (which may be absent, so the literal
  after it also counts; the expression's own separator never does), or the end.  So ``{a}.{b}`` on
  ``x.y.z`` gives ``a="x", b="y.z"``, and ``{+a}/x/{b}{?q}`` does not match ``p/x/q/x/r`` (``a="p"``
  leaves ``q/x/r`` for ``b``).  Every step is a ``find``/``rfind`` from the current position: linear time.
* **Three refinements** pick the right literal occurrence where it is cheap to know: the template's final
  literal is anchored at the end (``{name}.txt`` on ``a.txt.txt`` gives ``"a.txt"``); a literal containing
  ``/`` followed only by a fixed number of ``/`` (literals without ``?``/``#``, ``{x}``, ``{.x}``, ``{;x}``)
  starts that many ``/`` from the end (``repo://{+path}/blob/{ref}``, ``x{/dirs*}/{name}``); otherwise a
  ``{/a,b}`` before a literal starting with ``/`` takes one segment per variable (all, if exploded) and
  gives back segments until the literal fits (``{/a,b}/x{?q}`` on ``/1/2/x?q=3``).
* **Character classes.**  ``{x}``, ``{.x}``, ``{/x}``, ``{;x}`` never cross a raw ``/`` (except the ``/``
  operator's separator), ``?`` or ``#``; ``{?x}``/``{&x}`` may hold raw ``/`` and ``?`` (legal in a query)
  but not ``#``; ``{+x}`` and ``{#x}`` take anything.
* **Presence.**  ``{x}``/``{+x}`` must capture at least one character (``users://{id}/profile`` does not
  match ``users:///profile``).  An operator expression is present exactly when the URI has its leading
  character there; otherwise all its variables are absent.
* **Lists.**  Several variables in one expression are split on its separator and assigned in order,
  trailing ones possibly absent; an exploded one takes all items but one per later variable.  Surplus
  items re-join into the last variable (``{.ext}`` on ``.tar.gz`` is ``"tar.gz"``), except for ``/``
  (no match).  Adjacent expressions continuing each other (``{?a}{&b}``, ``{/a}{/b}``) match as one.
* **Named operators** (``; ? &``) match parameters in any order by name; absent ones are left out, empty
  pairs skipped, and an unknown or repeated non-exploded name means no match (so a router never sends
  ``?y=1`` to a ``{?x}`` template).  Exploded variables collect repetitions; exploded maps cannot match.
* **Values** are percent-decoded as UTF-8 (malformed escapes or invalid UTF-8: no match); exploded
  variables give ``list[str]``, others ``str``.  A ``:n`` prefix rejects longer values; a variable used
  twice must capture the same value.
* **Unresolvable shapes** (avoid them): ``{a}{b}`` (the second comes up empty), an expression whose leading
  character is the separator of an earlier, non-adjacent one (``{.a}{;b}{.c}``, ``{?a}{;b}{&c}``), ``?``
  or ``#`` twice in a row, and ``{/p*}`` followed by a ``/`` literal and then ``{+x}``, ``{/x}`` or a query.
* **Traversal** (``reject_traversal=True``, the default): no match when any decoded value (each list item)
  contains a NUL, a ``..`` segment (split on ``/`` and ``\\``), or, except for ``+`` and ``#``, any ``/``,
  so handlers that build file paths from ``{path}`` or ``{/path*}`` cannot be walked out of their root.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import quote, unquote_to_bytes

import attrs

__all__ = [
    "MAX_TEMPLATE_LENGTH",
    "MAX_VARIABLES",
    "MAX_URI_LENGTH",
    "MatchedVariables",
    "UriTemplate",
    "TemplateRouter",
]

#: Longest template accepted, in characters: templates are server-defined, this only bounds mistakes.
MAX_TEMPLATE_LENGTH = 8 * 1024
#: Most variable specifications in one template.
MAX_VARIABLES = 256
#: URIs longer than this never match, whatever the template: bounds the work an untrusted URI can cause.
MAX_URI_LENGTH = 64 * 1024

#: What ``match`` returns: decoded values, ``list`` for exploded variables.
MatchedVariables = dict[str, str | list[str]]

K = TypeVar("K")

_ALPHANUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_HEX = frozenset("0123456789abcdefABCDEF")
_RESERVED = ":/?#[]@!$&'()*+,;="
# Characters RFC 6570 section 2.1 excludes from literals (besides CTL, which is checked by code point).
_LITERAL_FORBIDDEN = frozenset(" \"'<>\\^`{|}")
_FUTURE_OPERATORS = frozenset("=,!@|")
# A "%" not followed by two hex digits.  Fixed width, so the scan is linear: this is a tokenizer check,
# not part of matching.
_MALFORMED_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@attrs.frozen
class _Op:
    """One row of the RFC 6570 appendix A table, plus the raw characters a capture may not contain."""

    char: str
    first: str
    sep: str
    named: bool
    ifemp: str
    reserved: bool
    forbidden: str


_OPS: dict[str, _Op] = {
    "": _Op("", "", ",", False, "", False, "/?#"),
    "+": _Op("+", "", ",", False, "", True, ""),
    ".": _Op(".", ".", ".", False, "", False, "/?#"),
    "/": _Op("/", "/", "/", False, "", False, "?#"),
    ";": _Op(";", ";", ";", True, "", False, "/?#"),
    "?": _Op("?", "?", "&", True, "=", False, "#"),
    "&": _Op("&", "&", "&", True, "=", False, "#"),
    "#": _Op("#", "#", ",", False, "", True, ""),
}


@attrs.frozen
class _VarSpec:
    name: str
    explode: bool
    prefix: int | None


@attrs.frozen
class _Expression:
    op: _Op
    specs: tuple[_VarSpec, ...]


@attrs.frozen
class _Group:
    """One or more adjacent expressions matched as a unit, with where its capture stops."""

    op: _Op
    firsts: str
    specs: tuple[_VarSpec, ...]
    stop_literal: str | None
    stop_chars: str
    greedy: bool
    #: The stop literal ends the template, so it can only sit at the end of the URI.
    literal_is_final: bool
    #: The rest of the template from the stop literal on always holds exactly this many ``/``: the
    #: literal then starts ``tail_offset`` characters before the ``tail_slashes``-th ``/`` from the end.
    tail_slashes: int | None
    tail_offset: int
    #: A ``/`` group whose next literal starts with ``/``: take segments, then give back to the literal.
    segment_window: bool
    #: Most segments such a group can hold (None: it has an exploded variable).
    max_segments: int | None


def _encode(value: str, allow_reserved: bool) -> str:
    """Percent-encode ``value`` as RFC 6570 ``U`` (unreserved only) or ``U+R`` (reserved and triplets kept)."""
    if not allow_reserved:
        return quote(value, safe="")
    pieces = value.split("%")
    out = [quote(pieces[0], safe=_RESERVED)]
    for piece in pieces[1:]:
        if len(piece) >= 2 and piece[0] in _HEX and piece[1] in _HEX:
            out.append("%" + piece[:2] + quote(piece[2:], safe=_RESERVED))
        else:
            out.append("%25" + quote(piece, safe=_RESERVED))
    return "".join(out)


def _decode(raw: str) -> str | None:
    """Percent-decode as UTF-8, or None for a malformed escape or invalid UTF-8."""
    if "%" not in raw:
        return raw
    if _MALFORMED_ESCAPE.search(raw):
        return None
    try:
        return unquote_to_bytes(raw).decode("utf-8")
    except UnicodeError:
        return None


def _unsafe(value: str, reserved: bool) -> bool:
    """True when a decoded value could escape a path root: NUL, a ``..`` segment, or ``/`` where not expected."""
    if "\x00" in value:
        return True
    if not reserved and "/" in value:
        return True
    if ".." in value:
        return any(seg == ".." for seg in value.replace("\\", "/").split("/"))
    return False


def _error(message: str, template: str, position: int) -> ValueError:
    return ValueError(f"invalid URI template {template[:80]!r}: {message} at position {position}")


def _check_varname(name: str, template: str, pos: int) -> None:
    """Validate an RFC 6570 varname: varchars (ALPHA / DIGIT / "_" / pct-encoded) with single inner dots."""
    if not name:
        raise _error("empty variable name", template, pos)
    i = 0
    n = len(name)
    previous_dot = True  # a leading dot is as bad as a double dot
    while i < n:
        c = name[i]
        if c == ".":
            if previous_dot:
                raise _error("misplaced '.' in variable name", template, pos + i)
            previous_dot = True
            i += 1
            continue
        previous_dot = False
        if c == "%":
            if i + 2 >= n or name[i + 1] not in _HEX or name[i + 2] not in _HEX:
                raise _error("malformed percent-encoding in variable name", template, pos + i)
            i += 3
        elif c in _ALPHANUM or c == "_":
            i += 1
        else:
            raise _error(f"invalid character {c!r} in variable name", template, pos + i)
    if previous_dot:
        raise _error("variable name ends with '.'", template, pos + n - 1)


def _parse_expression(body: str, template: str, pos: int) -> _Expression:
    """Parse the text between braces; ``pos`` is the position of its first character in the template."""
    if not body:
        raise _error("empty expression", template, pos - 1)
    op_char = body[0]
    if op_char in _FUTURE_OPERATORS:
        raise _error(f"reserved operator {op_char!r}", template, pos)
    if op_char in _OPS and op_char:
        op = _OPS[op_char]
        body = body[1:]
        pos += 1
    else:
        op = _OPS[""]
    specs: list[_VarSpec] = []
    for raw in body.split(","):
        explode = False
        prefix: int | None = None
        name = raw
        if raw.endswith("*"):
            explode = True
            name = raw[:-1]
        elif ":" in raw:
            name, _, digits = raw.partition(":")
            colon = pos + len(name)
            if not (1 <= len(digits) <= 4 and digits.isascii() and digits.isdigit() and digits[0] != "0"):
                raise _error("prefix length must be an integer from 1 to 9999", template, colon + 1)
            prefix = int(digits)
        _check_varname(name, template, pos)
        specs.append(_VarSpec(name, explode, prefix))
        pos += len(raw) + 1
    return _Expression(op, tuple(specs))


def _parse(template: str) -> list[str | _Expression]:
    """Split a template into literals (in expanded, percent-encoded form) and parsed expressions."""
    parts: list[str | _Expression] = []
    literal_start = 0
    i = 0
    n = len(template)
    while i < n:
        c = template[i]
        if c == "{":
            end = template.find("}", i + 1)
            if end < 0:
                raise _error("unclosed '{'", template, i)
            nested = template.find("{", i + 1, end)
            if nested >= 0:
                raise _error("'{' inside an expression", template, nested)
            if literal_start < i:
                parts.append(_encode(template[literal_start:i], True))
            parts.append(_parse_expression(template[i + 1 : end], template, i + 1))
            i = literal_start = end + 1
            continue
        if c == "}":
            raise _error("unmatched '}'", template, i)
        if c == "%":
            if i + 2 >= n or template[i + 1] not in _HEX or template[i + 2] not in _HEX:
                raise _error("malformed percent-encoding", template, i)
            i += 3
            continue
        if c in _LITERAL_FORBIDDEN or ord(c) < 0x20 or ord(c) == 0x7F:
            raise _error(f"character {c!r} not allowed in a literal", template, i)
        i += 1
    if literal_start < n:
        parts.append(_encode(template[literal_start:], True))
    return parts


def _compile(parts: list[str | _Expression]) -> tuple[str | _Group, ...]:
    """Turn parsed parts into match steps: encoded literals and groups with precomputed stop rules."""
    # Merge adjacent expressions whose next one's leading character is this one's separator.
    merged: list[str | list[_Expression]] = []
    for part in parts:
        if isinstance(part, str):
            merged.append(part)
            continue
        last = merged[-1] if merged else None
        if (
            isinstance(last, list)
            and part.op.first
            and part.op.first == last[-1].op.sep
            and part.op.named == last[-1].op.named
        ):
            last.append(part)
        else:
            merged.append([part])
    steps: list[str | _Group] = []
    for index, item in enumerate(merged):
        if isinstance(item, str):
            steps.append(item)
            continue
        stop_literal: str | None = None
        literal_is_final = False
        tail_slashes: int | None = None
        stop_chars = ""
        greedy = False
        for position in range(index + 1, len(merged)):
            following = merged[position]
            if isinstance(following, str):
                stop_literal = following
                literal_is_final = position == len(merged) - 1
                if "/" in following:
                    tail_slashes = _fixed_slashes(merged[index + 1 :])
                break
            firsts = "".join(dict.fromkeys(e.op.first for e in following))
            if not firsts:
                greedy = True
                break
            stop_chars += firsts
        specs = tuple(spec for e in item for spec in e.specs)
        steps.append(
            _Group(
                op=item[0].op,
                firsts="".join(dict.fromkeys(e.op.first for e in item)),
                specs=specs,
                stop_literal=stop_literal,
                # The group's own separator never ends it: its items are separated by it.
                stop_chars="".join(c for c in dict.fromkeys(stop_chars) if c != item[0].op.sep),
                greedy=greedy,
                literal_is_final=literal_is_final,
                tail_slashes=tail_slashes,
                tail_offset=stop_literal.find("/") if stop_literal is not None else -1,
                segment_window=item[0].op.char == "/" and stop_literal is not None and stop_literal[0] == "/",
                max_segments=None if any(spec.explode for spec in specs) else len(specs),
            )
        )
    return tuple(steps)


def _fixed_slashes(tail: list[str | list[_Expression]]) -> int | None:
    """How many ``/`` a URI has from this point on, if the template fixes it (literals and ``{x}``, ``{.x}``,
    ``{;x}``, which never produce a raw ``/``, ``?`` or ``#``); None when it does not."""
    count = 0
    for item in tail:
        if isinstance(item, str):
            if "?" in item or "#" in item:
                return None
            count += item.count("/")
        elif any(e.op.char not in ("", ".", ";") for e in item):
            return None
    return count


def _put(result: MatchedVariables, name: str, value: str | list[str]) -> bool:
    """Record a capture; False when the same variable already captured something different."""
    previous = result.get(name)
    if previous is not None and previous != value:
        return False
    result[name] = value
    return True


def _capture(group: _Group, region: str, result: MatchedVariables, reject_traversal: bool) -> bool:
    """Assign the variables of ``group`` from its captured ``region``; False means no match."""
    op = group.op
    content = region[1:] if group.firsts else region
    if not group.firsts and not content:
        return False
    for c in op.forbidden:
        if c in content and not (c == "/" and op.sep == "/"):
            return False
    reserved = op.reserved

    def value_of(raw: str, spec: _VarSpec) -> str | None:
        value = _decode(raw)
        if value is None:
            return None
        if spec.prefix is not None and len(value) > spec.prefix:
            return None
        if reject_traversal and _unsafe(value, reserved):
            return None
        return value

    if op.named:
        by_name = {spec.name: spec for spec in group.specs}
        lists: dict[str, list[str]] = {}
        seen: set[str] = set()
        for pair in content.split(op.sep):
            if not pair:
                continue
            name, _, raw = pair.partition("=")
            spec = by_name.get(name)
            if spec is None:
                return False
            value = value_of(raw, spec)
            if value is None:
                return False
            if spec.explode:
                lists.setdefault(name, []).append(value)
            elif name in seen or not _put(result, name, value):
                return False
            seen.add(name)
        return all(_put(result, name, values) for name, values in lists.items())

    items = content.split(op.sep)
    # Fast path for long exploded lists: nothing to decode and nothing a traversal check could find.
    plain = "%" not in content and not (reject_traversal and ("\x00" in content or ".." in content))
    specs = group.specs
    count = len(items)
    i = 0
    for index, spec in enumerate(specs):
        remaining = count - i
        if remaining <= 0:
            break
        after = len(specs) - index - 1
        if spec.explode:
            take = max(1, remaining - after)
            values: list[str] = items[i : i + take] if plain else []
            if not plain:
                for raw in items[i : i + take]:
                    value = value_of(raw, spec)
                    if value is None:
                        return False
                    values.append(value)
            i += take
            if not _put(result, spec.name, values):
                return False
            continue
        if after == 0 and remaining > 1:
            if op.sep == "/":
                return False
            raw_value = op.sep.join(items[i:])
            i = count
        else:
            raw_value = items[i]
            i += 1
        value = value_of(raw_value, spec)
        if value is None or not _put(result, spec.name, value):
            return False
    return True


def _scalar(value: object, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"URI template variable {name!r}: expected str or int items, got {type(value).__name__}")
    return str(value)


@attrs.frozen
class UriTemplate:
    """A parsed RFC 6570 template: expands values into URIs and matches URIs back into values."""

    template: str
    _parts: tuple[str | _Expression, ...] = attrs.field(init=False, repr=False, eq=False)
    _steps: tuple[str | _Group, ...] = attrs.field(init=False, repr=False, eq=False)
    _variables: tuple[str, ...] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        template = self.template
        if not isinstance(template, str):
            raise TypeError(f"URI template must be a str, not {type(template).__name__}")
        if len(template) > MAX_TEMPLATE_LENGTH:
            raise ValueError(
                f"URI template longer than {MAX_TEMPLATE_LENGTH} characters (error at position {MAX_TEMPLATE_LENGTH})"
            )
        parts = _parse(template)
        names = [spec.name for part in parts if isinstance(part, _Expression) for spec in part.specs]
        if len(names) > MAX_VARIABLES:
            raise ValueError(f"URI template has {len(names)} variables, more than {MAX_VARIABLES}")
        object.__setattr__(self, "_parts", tuple(parts))
        object.__setattr__(self, "_steps", _compile(parts))
        object.__setattr__(self, "_variables", tuple(dict.fromkeys(names)))

    def __str__(self) -> str:
        return self.template

    @property
    def variables(self) -> tuple[str, ...]:
        """Variable names in order of first appearance: what a handler's arguments must cover."""
        return self._variables

    def expand(self, values: Mapping[str, Any]) -> str:
        """Build the URI for ``values`` (str, int, list/tuple, or dict; None or missing means undefined)."""
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
            else:
                out.append(self._expand_expression(part, values))
        return "".join(out)

    @staticmethod
    def _expand_expression(expr: _Expression, values: Mapping[str, Any]) -> str:
        op = expr.op
        pieces: list[str] = []
        for spec in expr.specs:
            value = values.get(spec.name)
            if value is None:
                continue
            name = spec.name
            if isinstance(value, Mapping):
                pairs = [(_scalar(k, name), _scalar(v, name)) for k, v in value.items()]
                if not pairs:
                    continue
                if spec.prefix is not None:
                    raise ValueError(f"prefix modifier on associative array {name!r}")
                encoded = [(_encode(k, op.reserved), _encode(v, op.reserved)) for k, v in pairs]
                if spec.explode:
                    for k, v in encoded:
                        if op.named:
                            pieces.append(k + ("=" + v if v else op.ifemp))
                        else:
                            pieces.append(k + "=" + v)
                else:
                    joined = ",".join(k + "," + v for k, v in encoded)
                    pieces.append(name + ("=" + joined if joined else op.ifemp) if op.named else joined)
            elif isinstance(value, (list, tuple)):
                if not value:
                    continue
                if spec.prefix is not None:
                    raise ValueError(f"prefix modifier on list {name!r}")
                items = [_encode(_scalar(item, name), op.reserved) for item in value]
                if spec.explode:
                    for item in items:
                        pieces.append(name + ("=" + item if item else op.ifemp) if op.named else item)
                else:
                    joined = ",".join(items)
                    pieces.append(name + ("=" + joined if joined else op.ifemp) if op.named else joined)
            else:
                text = _scalar(value, name)
                if spec.prefix is not None:
                    text = text[: spec.prefix]
                encoded_text = _encode(text, op.reserved)
                if op.named:
                    pieces.append(name + ("=" + encoded_text if encoded_text else op.ifemp))
                else:
                    pieces.append(encoded_text)
        if not pieces:
            return ""
        return op.first + op.sep.join(pieces)

    def match(self, uri: str, *, reject_traversal: bool = True) -> MatchedVariables | None:
        """Decoded variables if ``uri`` is one this template describes, else None (rules in the module docstring)."""
        n = len(uri)
        if n > MAX_URI_LENGTH:
            return None
        result: MatchedVariables = {}
        p = 0
        for step in self._steps:
            if isinstance(step, str):
                if not uri.startswith(step, p):
                    return None
                p += len(step)
                continue
            if step.firsts:
                if p >= n or uri[p] not in step.firsts:
                    continue  # absent: every variable in the group is undefined
                search_from = p + 1
            else:
                search_from = p
            limit = n
            literal = step.stop_literal
            if literal is not None and step.literal_is_final:
                found = n - len(literal)
                if found < search_from or not uri.endswith(literal):
                    found = -1
            elif literal is not None and step.tail_slashes is not None:
                found = n
                for _ in range(step.tail_slashes):
                    found = uri.rfind("/", search_from, found)
                    if found < 0:
                        break
                else:
                    found -= step.tail_offset
                    if found < search_from:
                        found = -1
            elif literal is not None and step.segment_window:
                window, at_next_group = self._segment_window(uri, step, p, search_from)
                found = window if at_next_group else uri.rfind(literal, search_from, window + len(literal))
            elif literal is not None:
                found = uri.find(literal, search_from)
            if literal is not None:
                if found < 0:
                    if step.firsts and uri.startswith(literal, p):
                        continue  # the leading character belonged to the literal: group absent
                    return None
                limit = found
            stops = step.stop_chars + step.op.forbidden if step.greedy else step.stop_chars
            for c in stops:
                found = uri.find(c, search_from, limit)
                if found >= 0:
                    limit = found
            if not _capture(step, uri[p:limit], result, reject_traversal):
                return None
            p = limit
        return result if p == n else None

    @staticmethod
    def _segment_window(uri: str, group: _Group, p: int, search_from: int) -> tuple[int, bool]:
        """Where a ``/`` group's capture ends at the latest, and whether a following group starts there."""
        window = len(uri)
        at_next_group = False
        for c in group.stop_chars:
            found = uri.find(c, search_from, window)
            if found >= 0:
                window = found
                at_next_group = True
        for c in group.op.forbidden:
            found = uri.find(c, search_from, window)
            if found >= 0:
                window = found
                at_next_group = False
        if group.max_segments is None:
            return window, at_next_group
        q = p
        for _ in range(group.max_segments):
            q = uri.find("/", q + 1, window)
            if q < 0:
                return window, at_next_group
        return q, False


class TemplateRouter(Generic[K]):
    """Resource templates in registration order; resolves a concrete URI to the first template matching it."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: list[tuple[K, UriTemplate]] = []

    def add(self, key: K, template: str | UriTemplate) -> UriTemplate:
        """Register ``template`` under ``key`` after all earlier ones; returns the parsed template."""
        parsed = template if isinstance(template, UriTemplate) else UriTemplate(template)
        self._entries.append((key, parsed))
        return parsed

    def match(self, uri: str, *, reject_traversal: bool = True) -> tuple[K, MatchedVariables] | None:
        """``(key, variables)`` of the first registered template matching ``uri``, or None.

        Templates are tried in order; one whose leading literal differs fails on that comparison, so a lookup
        costs the total template size plus one linear scan per template that gets past its prefix."""
        if len(uri) > MAX_URI_LENGTH:
            return None
        for key, template in self._entries:
            variables = template.match(uri, reject_traversal=reject_traversal)
            if variables is not None:
                return key, variables
        return None

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[tuple[K, UriTemplate]]:
        return iter(self._entries)
