"""Newline-delimited JSON framing with a hard cap on line length (the stdio transport's wire format)."""

from __future__ import annotations

from typing import Final, cast

__all__ = ["LineFramer", "NEED_DATA", "END_OF_STREAM", "OversizedLine"]


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: ``next_line()`` needs more bytes before it can return a line.
NEED_DATA: Final = _Sentinel("NEED_DATA")
#: The peer closed its side and every complete line has been returned.
END_OF_STREAM: Final = _Sentinel("END_OF_STREAM")


class OversizedLine:
    """A line longer than the cap was discarded; ``size`` is how many bytes were dropped (at least)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size

    def __repr__(self) -> str:
        return f"OversizedLine(size={self.size})"


class LineFramer:
    """Turns a byte stream into lines, never buffering more than ``max_line_bytes`` of a line not yet ended.

    A line over the cap is dropped as it streams in and reported once as ``OversizedLine``, so a peer
    cannot make us hold an endless line in memory. A partial line at EOF is reported as oversized only
    when it is over the cap; otherwise it is returned as a final line (a peer that forgets the last
    newline still gets its message read).
    """

    __slots__ = ("_lines", "_partial", "_max", "_discarding", "_discarded", "_eof")

    def __init__(self, max_line_bytes: int = 16 * 1024 * 1024) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        #: The ended lines not yet returned, last first: each read is split once, and a line is one ``pop()``
        #: (one over the cap is an ``OversizedLine`` already, a CRLF line's ``\r`` is gone).
        self._lines: list[bytes | OversizedLine] = []
        self._partial = bytearray()
        self._max = max_line_bytes
        self._discarding = False
        self._discarded = 0
        self._eof = False

    def receive_data(self, data: bytes | bytearray) -> None:
        """Feed bytes read from the peer; ``b""`` means end of stream."""
        if self._eof:
            raise RuntimeError("receive_data() after end of stream")
        if not data:
            self._eof = True
            return
        partial = self._partial
        if b"\n" not in data:
            partial += data
            self._bound_partial()
            return
        parts = (data if type(data) is bytes else bytes(data)).split(b"\n")
        last = parts.pop()  # what follows the last newline
        ended = parts[0]  # with the partial line before it, a whole line
        if partial:
            partial += ended
            ended = bytes(partial)
            del partial[:]
        first: bytes | OversizedLine = ended
        if self._discarding:
            first = OversizedLine(self._discarded + len(ended))
            self._discarding = False
            self._discarded = 0
        partial += last
        self._bound_partial()
        lines = cast("list[bytes | OversizedLine]", parts)
        lines[0] = first
        if len(data) > self._max or len(ended) > self._max:  # a line of this read may be over the cap
            lines = [
                OversizedLine(len(line)) if type(line) is bytes and len(line) > self._max else line for line in lines
            ]
        if b"\r" in data or ended.endswith(b"\r"):  # CRLF line ends (the first's \r may be the last read's): once
            lines = [line[:-1] if type(line) is bytes and line.endswith(b"\r") else line for line in lines]
        lines.reverse()
        if self._lines:
            lines += self._lines
        self._lines = lines

    def _bound_partial(self) -> None:
        """Drop the line not yet ended once it is over the cap, counting what was dropped."""
        partial = self._partial
        if len(partial) > self._max:
            self._discarded += len(partial)
            self._discarding = True
            del partial[:]

    def next_line(self) -> bytes | OversizedLine | _Sentinel:
        """The next complete line (without its newline), ``OversizedLine``, ``NEED_DATA`` or ``END_OF_STREAM``."""
        lines = self._lines
        while lines:
            line = lines.pop()
            if type(line) is not bytes:
                return line
            if line and not line.isspace():
                return line
            # Blank lines between messages are allowed and skipped.
        if self._eof:
            return self._finish()
        return NEED_DATA

    def _finish(self) -> bytes | OversizedLine | _Sentinel:
        partial = self._partial
        if self._discarding:
            size = self._discarded + len(partial)
            self._discarding = False
            self._discarded = 0
            del partial[:]
            return OversizedLine(size)
        if partial.strip():
            line = bytes(partial).rstrip(b"\r")
            del partial[:]
            return line
        del partial[:]
        return END_OF_STREAM

    @property
    def buffered(self) -> int:
        """Bytes held of the line not yet ended (the lines ended but not yet returned are the caller's to take)."""
        return len(self._partial)
