"""RESP, the Redis wire protocol, without I/O: commands to bytes, bytes to replies (hiredis's C reader).

The same split as HTTP over h11: this module never touches a socket, so the client in ``redis.py`` owns every
byte it sends and receives, and with them every timeout and cancellation, on trio. hiredis is imported here
and nowhere else; without it the error names the extra to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Union

if TYPE_CHECKING:
    import hiredis

__all__ = ["Arg", "ErrorReply", "ReplyReader", "RespProtocolError", "encode_commands", "load_hiredis"]

Arg = Union[str, bytes, int, float]
"""One argument of a Redis command; text is sent as UTF-8."""

_NOT_ENOUGH: Final = object()


class ErrorReply(Exception):
    """A ``-ERR ...`` reply: Redis refused the command (its text is in ``args[0]``)."""


class RespProtocolError(Exception):
    """The bytes from the server are not RESP: the connection cannot be trusted any more."""


def load_hiredis() -> Any:
    """The ``hiredis`` module, or an ``ImportError`` naming the extra that installs it."""
    try:
        import hiredis
    except ImportError as exc:
        raise ImportError("the Redis support needs hiredis: pip install 'trio-mcp[redis]'") from exc
    return hiredis


def encode_commands(commands: Sequence[Sequence[Arg]]) -> bytes:
    """Several commands as one buffer, to be sent in one write (a pipeline)."""
    out = bytearray()
    for command in commands:
        out += b"*%d\r\n" % len(command)
        for arg in command:
            if isinstance(arg, str):
                data = arg.encode("utf-8")
            elif isinstance(arg, bytes):
                data = arg
            elif isinstance(arg, (int, float)) and not isinstance(arg, bool):
                data = repr(arg).encode("ascii")
            else:
                raise TypeError(f"a Redis argument must be str, bytes, int or float, not {type(arg).__name__}")
            out += b"$%d\r\n%s\r\n" % (len(data), data)
    return bytes(out)


class ReplyReader:
    """Feeds received bytes in, takes whole replies out; an error reply comes out as an ``ErrorReply`` value."""

    def __init__(self) -> None:
        module = load_hiredis()
        self._reader: hiredis.Reader = module.Reader(
            protocolError=RespProtocolError, replyError=ErrorReply, notEnoughData=_NOT_ENOUGH
        )

    def feed(self, data: bytes | bytearray) -> None:
        self._reader.feed(data if isinstance(data, bytes) else bytes(data))

    def next_reply(self) -> tuple[bool, Any]:
        """``(True, reply)`` for the next whole reply, ``(False, None)`` until more bytes arrive.

        Raises ``RespProtocolError`` on bytes that are not RESP.
        """
        reply = self._reader.gets()
        if reply is _NOT_ENOUGH:
            return False, None
        return True, reply
