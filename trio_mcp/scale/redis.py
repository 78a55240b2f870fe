"""A small Redis (or Valkey) client on trio: RESP over trio sockets, with hiredis parsing the replies.

Why not an existing client: redis-py's async client is asyncio only. coredis (6.9) and valkey-glide (2.6) do
run on trio, both through anyio, but they bring anyio and beartype, or protobuf and a 40 MB Rust core, and
were slower here (``python benchmarks/redis_clients.py``: one connection, GET round trips per second on
127.0.0.1, Redis 7.0, 2 shared cores; import time on top of trio and trio_mcp): this client 16,100/s and
7 ms; valkey-glide 5,900-10,500/s and 200 ms; coredis 2,800-4,900/s and 190 ms. The sans-I/O split
(``_resp.py``) is the h11 pattern this package already uses for HTTP, and owning the socket means trio's
rules hold exactly: a cancelled scope ends a command now (its connection is then discarded, since its reply
is unknown), and every wait has a bound.

Failure handling: connecting and each command have timeouts; a command that could not be sent (Redis down,
a refused connection) is retried on a new connection with exponential backoff, ``retries`` times; a command
that was sent but whose reply never came is retried only when the caller says it is idempotent, since it may
have been applied. Either way the caller ends up with one typed error: ``RedisUnavailable`` (an outage),
``RedisCommandError`` (Redis refused the command). Idle connections that the server closed (a restart) are
noticed before reuse and replaced, so a restart costs no request that arrives after it.
"""

from __future__ import annotations

import math
import ssl
from collections.abc import Sequence
from typing import Any
from urllib.parse import unquote, urlsplit

import trio

from ..errors import TrioMcpError
from ._connection import Connection, Failed
from ._resp import Arg, ErrorReply, RespProtocolError, encode_commands, load_hiredis

__all__ = ["RedisClient", "RedisError", "RedisUnavailable", "RedisCommandError"]


class RedisError(TrioMcpError):
    """Base class of the errors the Redis client raises."""


class RedisUnavailable(RedisError):
    """Redis could not be reached, or stopped answering, within the client's timeouts and retries.

    ``maybe_applied`` is True when the command had been sent: it may have taken effect before the failure.
    """

    def __init__(self, message: str, *, maybe_applied: bool) -> None:
        super().__init__(message)
        self.maybe_applied = maybe_applied


class RedisCommandError(RedisError):
    """Redis refused a command (wrong type, unknown command, out of memory...); the connection is fine."""


def _seconds(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
    return float(value)


class RedisClient:
    """A pool of connections to one Redis server; use as ``async with RedisClient(url) as redis:``.

    ``url`` is ``redis://[[user]:password@]host[:port][/db]``, or ``rediss://`` for TLS, verified against
    ``ssl_context`` (default: the system's trusted CAs and the host name).
    Bounds: ``connect_timeout`` per connection attempt, ``command_timeout`` per command (and per wait for a
    free connection), ``retries`` new connections after a failure, at most ``max_connections`` at once.
    """

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        connect_timeout: float = 2.0,
        command_timeout: float = 5.0,
        retries: int = 3,
        retry_backoff: float = 0.05,
        max_connections: int = 16,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        load_hiredis()  # fail here, naming the extra, rather than at the first command
        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss"):
            raise ValueError(f"url must start with redis:// or rediss:// (TLS), not {url!r}")
        if ssl_context is not None and parts.scheme != "rediss":
            raise ValueError("ssl_context is for rediss:// URLs only")
        self._ssl_context = (ssl_context or ssl.create_default_context()) if parts.scheme == "rediss" else None
        try:
            self.port = parts.port or 6379
            self.db = int(parts.path.strip("/") or 0)
        except ValueError:
            raise ValueError(f"url has an invalid port or database number: {url!r}") from None
        self.host = parts.hostname or "127.0.0.1"
        self._auth: list[Arg] = []
        if parts.password is not None:
            self._auth = ["AUTH", unquote(parts.username or "default"), unquote(parts.password)]
        self.connect_timeout = _seconds("connect_timeout", connect_timeout)
        self.command_timeout = _seconds("command_timeout", command_timeout)
        self.retry_backoff = _seconds("retry_backoff", retry_backoff)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a whole number, 0 or more, not {retries!r}")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise ValueError(f"max_connections must be a whole number, 1 or more, not {max_connections!r}")
        self.retries = retries
        self._slots = trio.Semaphore(max_connections)
        self._idle: list[Connection] = []
        self._closed = False

    def __repr__(self) -> str:
        scheme = "rediss" if self._ssl_context else "redis"
        return f"RedisClient({scheme}://{self.host}:{self.port}/{self.db})"

    async def __aenter__(self) -> RedisClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every idle connection; commands in flight finish, later ones raise ``RedisError``."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await trio.aclose_forcefully(connection.stream)

    async def execute(self, *command: Arg, idempotent: bool = True) -> Any:
        """Run one command and return its reply (bytes, int, list, None); see ``pipeline``."""
        (reply,) = await self.pipeline([command], idempotent=idempotent)
        return reply

    async def pipeline(self, commands: Sequence[Sequence[Arg]], *, idempotent: bool = True) -> list[Any]:
        """Send ``commands`` in one write and return their replies, in order.

        Raises ``RedisCommandError`` if Redis refused any of them (the others ran), ``RedisUnavailable`` on an
        outage. Pass ``idempotent=False`` for commands that must not run twice (``XADD``, ``INCR``): they are
        then retried only when they certainly were not sent.
        """
        if not commands:
            return []
        payload = encode_commands(commands)
        attempt = 0
        while True:
            try:
                replies = await self._attempt(payload, len(commands))
                break
            except Failed as failure:
                retry = not failure.sent or (idempotent and not failure.timed_out)
                if not retry or attempt >= self.retries:
                    where = f"Redis at {self.host}:{self.port}"
                    raise RedisUnavailable(f"{where}: {failure}", maybe_applied=failure.sent) from None
            attempt += 1
            await trio.sleep(self.retry_backoff * 2 ** (attempt - 1))
        for command, reply in zip(commands, replies):
            if isinstance(reply, ErrorReply):
                name = command[0].decode() if isinstance(command[0], bytes) else str(command[0])
                raise RedisCommandError(f"Redis refused {name.upper()}: {reply.args[0]}")
        return replies

    async def open_dedicated_connection(self) -> Connection:
        """A new connection of the caller's own, logged in and on the client's database, outside the pool (not
        counted in ``max_connections``, never used for commands): for a connection whose state the pool must not
        share, such as one in subscribe mode (``pubsub.subscribe``). The caller closes its ``stream``.

        One attempt, bounded by ``connect_timeout``; retrying is the caller's. It fails as the connection's own
        ``round_trip`` does, with ``Failed`` (``sent=False``), or with ``RedisCommandError`` when Redis refuses
        the login and ``RedisError`` when the TLS certificate is not trusted.
        """
        return await self._connect()

    async def _attempt(self, payload: bytes, count: int) -> list[Any]:
        if self._closed:
            raise RedisError("the Redis client is closed")
        try:
            self._slots.acquire_nowait()  # the usual case: no scheduling round just to take a free slot
        except trio.WouldBlock:
            with trio.move_on_after(self.command_timeout) as waiting:
                await self._slots.acquire()
            if waiting.cancelled_caught:
                raise Failed(
                    f"no connection became free within {self.command_timeout:g} s", sent=False, timed_out=True
                ) from None
        try:
            connection = await self._checkout()
            done = False
            try:
                with trio.move_on_after(self.command_timeout) as timer:
                    replies = await connection.round_trip(payload, count)
                    done = True
                if timer.cancelled_caught:
                    raise Failed(f"no reply within {self.command_timeout:g} s", sent=True, timed_out=True)
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise Failed(f"the connection failed ({exc.__class__.__name__})", sent=True) from None
            except RespProtocolError:
                raise Failed("the server sent bytes that are not RESP", sent=True) from None
            finally:
                if done and not self._closed:
                    self._idle.append(connection)
                else:  # its state is unknown (or we are closing): never reuse it
                    await trio.aclose_forcefully(connection.stream)
            return replies
        finally:
            self._slots.release()

    async def _checkout(self) -> Connection:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed_by_peer():
                return connection
            await trio.aclose_forcefully(connection.stream)
        return await self._connect()

    async def _connect(self) -> Connection:
        with trio.move_on_after(self.connect_timeout) as timer:
            try:
                stream = await trio.open_tcp_stream(self.host, self.port)
            except OSError as exc:
                raise Failed(f"cannot connect ({exc.strerror or exc})", sent=False) from None
        if timer.cancelled_caught:
            raise Failed(f"cannot connect within {self.connect_timeout:g} s", sent=False)
        connection = Connection(await self._secure(stream) if self._ssl_context else stream, stream)
        setup: list[list[Arg]] = ([self._auth] if self._auth else []) + ([["SELECT", self.db]] if self.db else [])
        if setup:
            try:
                with trio.fail_after(self.connect_timeout):
                    replies = await connection.round_trip(encode_commands(setup), len(setup))
            except (OSError, trio.BrokenResourceError, trio.TooSlowError, RespProtocolError, Failed):
                await trio.aclose_forcefully(stream)
                raise Failed("the connection failed while logging in", sent=False) from None
            refused = next((reply for reply in replies if isinstance(reply, ErrorReply)), None)
            if refused is not None:
                await trio.aclose_forcefully(stream)
                raise RedisCommandError(f"Redis refused the login: {refused.args[0]}")
        return connection

    async def _secure(self, tcp: trio.SocketStream) -> trio.SSLStream[trio.SocketStream]:
        """TLS over ``tcp``; an untrusted certificate is a ``RedisError`` at once (retrying would not help)."""
        assert self._ssl_context is not None
        tls = trio.SSLStream(tcp, self._ssl_context, server_hostname=self.host)
        with trio.move_on_after(self.connect_timeout) as timer:
            try:
                await tls.do_handshake()
            except trio.BrokenResourceError as exc:
                await trio.aclose_forcefully(tcp)
                if isinstance(exc.__cause__, ssl.SSLCertVerificationError):
                    raise RedisError(f"Redis at {self.host}:{self.port}: {exc.__cause__.verify_message}") from None
                raise Failed("the TLS handshake failed", sent=False) from None
        if timer.cancelled_caught:
            await trio.aclose_forcefully(tcp)
            raise Failed(f"no TLS handshake within {self.connect_timeout:g} s", sent=False)
        return tls
