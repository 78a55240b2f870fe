"""What both ends of our HTTP/1.1 code share: header fields, the server's limits and its errors."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, TypeVar, Union, overload

import attrs

__all__ = [
    "ClientDisconnected",
    "Headers",
    "HeadersLike",
    "HttpLimits",
    "MalformedRequestBody",
    "RequestBodyError",
    "RequestBodyTimeout",
    "RequestBodyTooLarge",
    "EncodedHeaders",
    "decode_headers",
    "encode_headers",
    "has_header",
]


_T = TypeVar("_T")

# --- headers -------------------------------------------------------------------------------------------------


class Headers(Mapping[str, str]):
    """Case-insensitive, read-only header fields in wire order; ``get_all`` keeps repeated fields apart.

    ``headers[name]`` and ``get`` join repeated fields with ", " (RFC 9110 section 5.3); use ``get_all`` where
    that is wrong (``Set-Cookie``) or where a repeat is itself an error to detect. Names are lower case, values
    are decoded as ISO-8859-1 so that no byte is lost.
    """

    __slots__ = ("_index", "_names", "_repeats", "_values")

    def __init__(self, items: Iterable[tuple[str, str]] = ()) -> None:
        pairs = [(name.lower(), value) for name, value in items]
        self._keep([name for name, _ in pairs], [value for _, value in pairs])

    def _keep(self, names: list[str], values: list[str]) -> None:
        """Keep the fields (``names`` lower case already) and index them by name: one dict built in C, each name
        to its value, and apart the few names that repeat, each to its values (most requests repeat none)."""
        index = dict(zip(names, values))
        repeats: dict[str, list[str]] | None = None
        if len(index) != len(names):
            grouped: dict[str, list[str]] = {}
            for name, value in zip(names, values):
                grouped.setdefault(name, []).append(value)
            repeats = {name: group for name, group in grouped.items() if len(group) > 1}
            index.update((name, ", ".join(group)) for name, group in repeats.items())
        self._names = names
        self._values = values
        self._index = index
        self._repeats = repeats

    def __getitem__(self, name: str) -> str:
        return self._index[name.lower()]

    @overload
    def get(self, name: str) -> str | None: ...
    @overload
    def get(self, name: str, default: str | _T) -> str | _T: ...
    def get(self, name: str, default: object = None) -> object:
        # Not Mapping's (which catches a KeyError): most lookups are of fields a request does not carry.
        return self._index.get(name.lower(), default)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def get_all(self, name: str) -> list[str]:
        """Every value of field ``name`` in the order received; ``[]`` if absent."""
        name = name.lower()
        if self._repeats is not None and name in self._repeats:
            return list(self._repeats[name])
        value = self._index.get(name)
        return [] if value is None else [value]

    def multi_items(self) -> list[tuple[str, str]]:
        """All ``(name, value)`` pairs in wire order, repeats included."""
        return list(zip(self._names, self._values))

    def __repr__(self) -> str:
        return f"Headers({self.multi_items()!r})"


HeadersLike = Union[Mapping[str, str], Iterable[tuple[str | bytes, str | bytes]]]
"""Headers a caller hands us: a mapping, or ``(name, value)`` pairs (repeats allowed), as ``str`` or ``bytes``."""


def decode_headers(raw: Iterable[tuple[bytes, bytes]]) -> Headers:
    """``Headers`` from ``(name, value)`` pairs as they came off the wire (a request is parsed once per exchange).

    The names are decoded and lowered in one piece, and the values in another: a few calls in C rather than
    three per field."""
    pairs = list(raw)
    headers = Headers.__new__(Headers)
    if not pairs:
        headers._keep([], [])
        return headers
    raw_names, raw_values = zip(*pairs)
    names = b"\n".join(raw_names).decode("latin-1").lower().split("\n")
    values = b"\n".join(raw_values).decode("latin-1").split("\n")
    if len(names) != len(pairs) or len(values) != len(pairs):  # a line break inside a field (never from h11)
        names = [name.decode("latin-1").lower() for name in raw_names]
        values = [value.decode("latin-1") for value in raw_values]
    headers._keep(names, values)
    return headers


class EncodedHeaders(tuple[tuple[bytes, bytes], ...]):
    """Header fields encoded once, for a head sent on every response (a JSON answer's, an SSE stream's):
    ``encode_headers`` takes them as they are."""

    __slots__ = ()

    def __new__(cls, headers: HeadersLike) -> EncodedHeaders:
        return super().__new__(cls, encode_headers(headers))

    def plus(self, headers: HeadersLike) -> EncodedHeaders:
        """These fields then ``headers``, these shared rather than encoded again (a session's head over the
        common SSE one: one field of its own, not a copy of them all)."""
        return super().__new__(EncodedHeaders, [*self, *encode_headers(headers)])


def encode_headers(headers: HeadersLike) -> list[tuple[bytes, bytes]]:
    """Headers a caller hands us as wire pairs: names lower case, in order, repeats kept."""
    if type(headers) is EncodedHeaders:
        return list(headers)
    if isinstance(headers, Headers):
        pairs: Iterable[tuple[str | bytes, str | bytes]] = headers.multi_items()
    elif isinstance(headers, Mapping):
        pairs = headers.items()
    else:
        pairs = headers
    encoded: list[tuple[bytes, bytes]] = []
    for name, value in pairs:
        raw_name = name.encode("ascii") if isinstance(name, str) else bytes(name)
        raw_value = value.encode("latin-1") if isinstance(value, str) else bytes(value)
        encoded.append((raw_name.lower(), raw_value))
    return encoded


def has_header(headers: list[tuple[bytes, bytes]], name: bytes) -> bool:
    """Whether encoded ``headers`` carry a field ``name`` (lower case)."""
    for key, _ in headers:  # a loop, not a generator: a response's head is checked on every request
        if key == name:
            return True
    return False


# --- limits and errors ---------------------------------------------------------------------------------------


def _positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not value > 0:
        raise ValueError(f"{attribute.name} must be positive, not {value!r}")


@attrs.frozen(kw_only=True)
class HttpLimits:
    """Every bound the server enforces; the defaults suit an MCP endpoint on a trusted network edge.

    Timeouts are in seconds (``math.inf`` disables one). ``max_connections``: a connection over the cap is
    accepted and answered at once with ``503 Service Unavailable`` (``Retry-After: 1``, ``Connection: close``)
    rather than left waiting in the kernel's backlog, so clients learn why instead of timing out; rejected
    connections are themselves capped at the same number, beyond which they are closed without a word.
    """

    #: Largest request head (request line plus headers), h11's ``max_incomplete_event_size``; over it: 431.
    max_header_bytes: int = attrs.field(default=32 * 1024, validator=_positive)
    #: Most header fields in one request; over it: 431.
    max_header_count: int = attrs.field(default=100, validator=_positive)
    #: Largest request body; a larger Content-Length gets 413 before the handler runs, a chunked body is counted.
    max_body_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=_positive)
    #: The whole request head must arrive within this time of its first byte (slowloris); then 408 and close.
    header_timeout: float = attrs.field(default=10.0, validator=_positive)
    #: The whole body must arrive within this time of the handler's first ``read_body()``; then 408 and close.
    body_timeout: float = attrs.field(default=30.0, validator=_positive)
    #: How long an idle keep-alive connection waits for its next request before it is closed.
    keep_alive_timeout: float = attrs.field(default=15.0, validator=_positive)
    #: Longest a single write may wait for the client to read; then the connection is dropped.
    write_timeout: float = attrs.field(default=30.0, validator=_positive)
    #: Most connections served at once.
    max_connections: int = attrs.field(default=1000, validator=_positive)
    #: The default deadline of a ``Drain`` (a graceful stop); cancelling the server does not wait at all.
    graceful_shutdown_timeout: float = attrs.field(default=5.0, validator=attrs.validators.ge(0))


class ClientDisconnected(Exception):
    """The client went away (EOF, reset, or it stopped reading): nothing more can be sent on this response.

    Raised at the call site (``write``, ``send``, ``read_body``); a handler may let it propagate, and the
    server then closes the connection without logging an error.
    """


class RequestBodyError(Exception):
    """``read_body()`` failed because of what the client sent; ``status`` is the answer the server gives.

    If the handler lets it propagate, the server answers with ``status`` (unless a response has already
    started) and closes the connection.
    """

    status = 400


class RequestBodyTooLarge(RequestBodyError):
    """The body is larger than ``HttpLimits.max_body_bytes`` (413)."""

    status = 413


class RequestBodyTimeout(RequestBodyError):
    """The body did not arrive within ``HttpLimits.body_timeout`` (408)."""

    status = 408


class MalformedRequestBody(RequestBodyError):
    """The body's framing is broken, e.g. a bad chunk header (400)."""

    status = 400
