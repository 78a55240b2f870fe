"""Newline-delimited JSON framing with a hard cap on line length (the stdio transport's wire format)."""

from __future__ import annotations

from typing import Final

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
    """Turns a byte stream into lines, never buffering more than ``max_line_bytes``.

    A line over the cap is dropped as it streams in and reported once as ``OversizedLine``, so a peer
    cannot make us hold an endless line in memory. A partial line at EOF is reported as oversized only
    when it is over the cap; otherwise it is returned as a final line (a peer that forgets the last
    newline still gets its message read).
    """

    __slots__ = ("_buffer", "_scan_from", "_max", "_discarding", "_discarded", "_eof")

    def __init__(self, max_line_bytes: int = 16 * 1024 * 1024) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._buffer = bytearray()
        self._scan_from = 0
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
        else:
            self._buffer += data

    def next_line(self) -> bytes | OversizedLine | _Sentinel:
        """The next complete line (without its newline), ``OversizedLine``, ``NEED_DATA`` or ``END_OF_STREAM``."""
        buffer = self._buffer
        while True:
            newline = buffer.find(b"\n", self._scan_from)
            if newline < 0:
                if len(buffer) > self._max:
                    self._discarded += len(buffer)
                    self._discarding = True
                    del buffer[:]
                    self._scan_from = 0
                elif not self._eof:
                    self._scan_from = len(buffer)
                if self._eof:
                    return self._finish()
                return NEED_DATA
            line = bytes(buffer[:newline])
            del buffer[: newline + 1]
            self._scan_from = 0
            if self._discarding:
                size = self._discarded + len(line)
                self._discarding = False
                self._discarded = 0
                return OversizedLine(size)
            if len(line) > self._max:
                return OversizedLine(len(line))
            if line.endswith(b"\r"):
                line = line[:-1]
            if line.strip():
                return line
            # Blank lines between messages are allowed and skipped.

    def _finish(self) -> bytes | OversizedLine | _Sentinel:
        buffer = self._buffer
        if self._discarding:
            size = self._discarded + len(buffer)
            self._discarding = False
            self._discarded = 0
            del buffer[:]
            return OversizedLine(size)
        if buffer.strip():
            line = bytes(buffer).rstrip(b"\r")
            del buffer[:]
            return line
        del buffer[:]
        return END_OF_STREAM

    @property
    def buffered(self) -> int:
        """Bytes held waiting for a newline."""
        return len(self._buffer)
