"""Server-Sent Events without I/O: an encoder, and an incremental decoder that follows the WHATWG rules.

The decoder is the parser from the HTML standard's "Parsing an event stream" section, fed bytes in chunks of
any size: a UTF-8 BOM at the start of a stream is dropped once, CR, LF and CRLF all end a line (also when the
CR and LF arrive in different chunks), comments and unknown fields are ignored, ``id`` and ``retry`` take
effect even when no event is dispatched. It adds one thing the standard leaves to implementations: a size
limit, so a peer cannot make us buffer an endless line or event.

Nothing here imports trio; the HTTP transports feed it what they read from the socket.
"""

from __future__ import annotations

import re
from typing import Final

import attrs

__all__ = [
    "DEFAULT_MAX_EVENT_BYTES",
    "ServerSentEvent",
    "SSEDecoder",
    "SSEProtocolError",
    "encode_comment",
    "encode_event",
]

#: Default cap on one line, and on the data of one event, in bytes (as large as the stdio line limit).
DEFAULT_MAX_EVENT_BYTES: Final = 16 * 1024 * 1024

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_EOL = re.compile(rb"[\r\n]")
_BOM: Final = b"\xef\xbb\xbf"
_CR: Final = 0x0D
_LF: Final = 0x0A
# Python refuses to turn more than 4300 digits into an int; no sane reconnection delay comes close.
_MAX_RETRY_DIGITS: Final = 4000


class SSEProtocolError(ValueError):
    """The peer sent an event stream we refuse to buffer: a line or an event over the decoder's size limit."""


@attrs.frozen(kw_only=True)
class ServerSentEvent:
    """One dispatched event, as an ``EventSource`` would deliver it.

    ``id`` is the stream's last event ID at dispatch time (the WHATWG ``lastEventId``, which persists from
    earlier events); ``retry`` is the reconnection delay in milliseconds set by this event's own fields, if any.
    """

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(0)))


def _field(name: str, value: str) -> str:
    # One space after the colon always: the decoder strips exactly one, so a value that itself starts
    # with a space survives the round trip.
    return f"{name}: {value}\n" if value else f"{name}:\n"


def _retry_ok(retry: int | None) -> bool:
    return retry is None or (isinstance(retry, int) and not isinstance(retry, bool) and retry >= 0)


def _single_line(name: str, value: str) -> str:
    if "\r" in value or "\n" in value:
        raise ValueError(f"an SSE {name} cannot contain CR or LF: {value!r}")
    return value


def encode_event(data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None) -> bytes:
    """One complete event (ending in a blank line), UTF-8 encoded and ready to write.

    Multi-line ``data`` becomes one ``data:`` line per line; any of CR, LF and CRLF counts as a line break, so
    the receiver sees the lines joined with ``\\n``. ``data=""`` still writes a ``data:`` line, which makes an
    event that carries only an ``id`` (a priming event) visible to the receiver. Raises ``ValueError`` for CR or
    LF in ``event`` or ``id``, NUL in ``id`` (receivers ignore such ids), a negative ``retry``, or lone
    surrogates anywhere.
    """
    if id and not event and "\n" not in id and "\r" not in id and "\0" not in id:
        # An event of a stream (its message's one-line JSON and store id), or the mark a stream starts with (no data,
        # a retry hint): the two a resumable stream writes most, each checked for what it holds (``in`` scans a
        # string several times faster than a regular expression does).
        if retry is None:
            if data and "\n" not in data and "\r" not in data:
                return f"id: {id}\ndata: {data}\n\n".encode()
        elif not data and type(retry) is int and retry >= 0:  # any other retry: checked below
            return f"id: {id}\nretry: {retry}\ndata:\n\n".encode()
    parts: list[str] = []
    if id is not None:
        if "\0" in _single_line("id", id):
            raise ValueError(f"an SSE id cannot contain NUL (receivers ignore it): {id!r}")
        parts.append(_field("id", id))
    if event:
        parts.append(_field("event", _single_line("event", event)))
    if retry is not None:
        if not _retry_ok(retry):
            raise ValueError(f"an SSE retry must be a non-negative int of milliseconds, not {retry!r}")
        parts.append(f"retry: {retry}\n")
    for line in _LINE_BREAK.split(data):
        parts.append(_field("data", line))
    parts.append("\n")
    return "".join(parts).encode("utf-8")


def encode_comment(text: str = "") -> bytes:
    """A comment line (``:`` + text), which receivers ignore: the keep-alive that stops proxies timing out."""
    return "".join(f": {line}\n" if line else ":\n" for line in _LINE_BREAK.split(text)).encode("utf-8")


class SSEDecoder:
    """Turns the bytes of one ``text/event-stream`` response into ``ServerSentEvent`` objects.

    ``receive_data(chunk)`` returns the events completed by the chunk; ``b""`` (or ``receive_eof()``) ends the
    stream, discarding a partial event as the standard requires, and readies the decoder for the next
    connection's stream. ``last_event_id`` and ``retry`` survive that, since a reconnecting client sends the
    first as ``Last-Event-ID`` and waits the second. A line, or the data of one event, longer than
    ``max_event_bytes`` raises ``SSEProtocolError``; after that the decoder stays failed (the stream cannot be
    resynchronised) and every call raises again.
    """

    __slots__ = (
        "_max",
        "_buffer",
        "_scan_from",
        "_at_stream_start",
        "_skip_lf",
        "_data",
        "_data_bytes",
        "_event_type",
        "_id_buffer",
        "_event_retry",
        "_failed",
        "last_event_id",
        "retry",
    )

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES) -> None:
        if max_event_bytes < 1:
            raise ValueError("max_event_bytes must be positive")
        self._max = max_event_bytes
        self._buffer = bytearray()
        self._scan_from = 0
        self._at_stream_start = True
        self._skip_lf = False
        self._data: list[str] = []
        self._data_bytes = 0
        self._event_type = ""
        self._id_buffer = ""
        self._event_retry: int | None = None
        self._failed: str | None = None
        #: The ID of the last dispatched event (or set by an ``id:`` field before a blank line); "" if none.
        self.last_event_id = ""
        #: The reconnection delay in milliseconds most recently set by the server, or None.
        self.retry: int | None = None

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[ServerSentEvent]:
        """Feed bytes read from the peer; returns the events they complete, in order. ``b""`` means EOF."""
        if self._failed is not None:
            raise SSEProtocolError(self._failed)
        if not data:
            return self.receive_eof()
        buffer = self._buffer
        buffer += data
        if self._at_stream_start:
            if len(buffer) < len(_BOM) and _BOM.startswith(buffer):
                return []  # might still become a BOM
            if buffer.startswith(_BOM):
                del buffer[: len(_BOM)]
            self._at_stream_start = False
        if self._skip_lf and buffer:
            # The previous chunk ended in CR; an LF now is the second half of that CRLF.
            if buffer[0] == _LF:
                del buffer[0]
            self._skip_lf = False
        events: list[ServerSentEvent] = []
        start = 0
        match = _EOL.search(buffer, self._scan_from)
        while match is not None:
            end = match.start()
            if buffer[end] == _CR:
                if end + 1 < len(buffer):
                    after = end + 2 if buffer[end + 1] == _LF else end + 1
                else:
                    after = end + 1
                    self._skip_lf = True
            else:
                after = end + 1
            self._process_line(buffer, start, end, events)
            start = after
            match = _EOL.search(buffer, start)
        if start:
            del buffer[:start]
        self._scan_from = len(buffer)
        if len(buffer) > self._max:
            self._fail(
                f"the server sent an SSE line of more than {self._max} bytes without a line break "
                f"(at least {len(buffer)} bytes so far)"
            )
        return events

    def receive_eof(self) -> list[ServerSentEvent]:
        """End of the stream: a partial event is discarded (never dispatched), so this returns ``[]``."""
        if self._failed is not None:
            raise SSEProtocolError(self._failed)
        del self._buffer[:]
        self._scan_from = 0
        self._at_stream_start = True
        self._skip_lf = False
        self._data = []
        self._data_bytes = 0
        self._event_type = ""
        self._id_buffer = self.last_event_id
        self._event_retry = None
        return []

    def _fail(self, message: str) -> None:
        self._failed = message
        self._buffer = bytearray()
        self._data = []
        raise SSEProtocolError(message)

    def _process_line(self, buffer: bytearray, start: int, end: int, events: list[ServerSentEvent]) -> None:
        if end - start > self._max:
            self._fail(f"the server sent an SSE line of {end - start} bytes, over the {self._max}-byte limit")
        if start == end:
            self._dispatch(events)
            return
        line = bytes(buffer[start:end])
        if line[0] == 0x3A:  # ":" starts a comment
            return
        colon = line.find(b":")
        if colon < 0:
            name, value = line, b""
        else:
            name, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if name == b"data":
            self._data_bytes += len(value) + 1
            if self._data_bytes > self._max:
                self._fail(f"the server sent an SSE event with more than {self._max} bytes of data")
            self._data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            self._event_type = value.decode("utf-8", "replace")
        elif name == b"id":
            if b"\0" not in value:
                self._id_buffer = value.decode("utf-8", "replace")
        elif name == b"retry":
            # bytes.isdigit() is ASCII-only, exactly the standard's "ASCII digits".
            if value and value.isdigit() and len(value) <= _MAX_RETRY_DIGITS:
                self.retry = self._event_retry = int(value)
        # Any other field name is ignored.

    def _dispatch(self, events: list[ServerSentEvent]) -> None:
        self.last_event_id = self._id_buffer
        retry, self._event_retry = self._event_retry, None
        if not self._data:
            self._event_type = ""
            return
        events.append(
            ServerSentEvent(
                data="\n".join(self._data),
                event=self._event_type or "message",
                id=self.last_event_id,
                retry=retry,
            )
        )
        self._data = []
        self._data_bytes = 0
        self._event_type = ""
