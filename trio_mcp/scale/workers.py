"""N worker processes serving one MCP server over HTTP on one port, under a supervisor that keeps them up.

The supervisor binds the listening socket once and every worker inherits it (one accept queue: a worker that
dies loses no queued connection, and a busy worker leaves new connections to idle ones). It restarts a worker
that dies, with exponential backoff, and kills one whose event loop stops sending heartbeats (blocked); SIGTERM or SIGINT makes it forward SIGTERM to every worker, which stops
accepting and lets in-flight requests finish within ``drain_timeout`` seconds, after which what is left is
killed. If workers keep dying (more than ``max_restarts`` deaths within ``restart_window`` seconds) the
supervisor stops the rest and returns 1, so a process manager above it sees the failure.

Workers build the server themselves from its import path (``"package.module:server"``), so nothing is pickled
and each worker is a fresh interpreter. They share no state but the signing key for ``requestState`` and
pagination cursors: ``TRIO_MCP_SECRET_KEY`` is passed on when set, otherwise the supervisor makes one for its
workers (see ``trio_mcp._keys``). Modern (2026-07-28) requests work on any worker; a legacy-era session
lives in the worker that created it unless the workers share a Redis (``redis``: sessions roam, with their
events and task records), see docs/deployment.md. POSIX only (inherited file descriptors).
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import signal
import socket
import sys
from typing import Final

import attrs
import trio

from .._console_log import serving_console
from .._keys import MIN_SECRET_KEY_LENGTH, SECRET_KEY_ENV
from .._tls import server_tls_context

__all__ = ["WorkerSettings", "run_workers", "supervise_workers"]

logger = logging.getLogger("trio_mcp.scale")

#: A worker that ran this long before dying is restarted without delay: its death was not a crash loop.
_STABLE_SECONDS: Final = 10.0
_FIRST_BACKOFF: Final = 0.1
_MAX_BACKOFF: Final = 5.0
#: Extra time after ``drain_timeout`` for a worker to exit on its own before it is killed.
_EXIT_MARGIN: Final = 1.0
_HEARTBEATS_PER_TIMEOUT: Final = 5
#: How much longer than ``worker_timeout`` a starting worker has for its first heartbeat (importing the server).
_STARTING: Final = 10.0
_READ_SIZE: Final = 4096
#: How the supervisor hands ``redis`` to its workers: in their environment, so a password stays off ``ps``.
REDIS_URL_ENV: Final = "TRIO_MCP_WORKERS_REDIS_URL"


def _positive(instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name} must be a positive number of seconds, not {value!r}")


def _redis_url(instance: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and not (isinstance(value, str) and value.startswith(("redis://", "rediss://"))):
        raise ValueError(f"{attribute.name} must be a redis:// or rediss:// URL, not {value!r}")


def _app_spec(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    module, colon, name = value.partition(":") if isinstance(value, str) else ("", "", "")
    if not (module and colon and name):
        raise ValueError(f"{attribute.name} must name an object as 'package.module:attribute', not {value!r}")


_LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


@attrs.frozen(kw_only=True)
class WorkerSettings:
    """What ``supervise_workers`` runs; every field is checked when the settings are made."""

    #: The ``trio_mcp.Server`` each worker serves, as ``"package.module:attribute"``.
    server: str = attrs.field(validator=_app_spec)
    #: How many worker processes.
    workers: int = attrs.field(default=2, validator=[attrs.validators.instance_of(int), attrs.validators.ge(1)])
    host: str = "127.0.0.1"
    #: 0 picks a free port (``task_status.started()`` reports it).
    port: int = attrs.field(default=8000, validator=[attrs.validators.instance_of(int), attrs.validators.ge(0)])
    #: An ``HttpTransportOptions`` as ``"package.module:attribute"``, or None for the defaults.
    options: str | None = attrs.field(default=None, validator=attrs.validators.optional(_app_spec))
    #: Seconds in-flight requests get after SIGTERM before they are cancelled and the worker is killed.
    drain_timeout: float = attrs.field(default=10.0, validator=_positive)
    #: A worker whose event loop sends no heartbeat for this long (a handler blocking it) is killed and replaced.
    worker_timeout: float = attrs.field(default=30.0, validator=_positive)
    #: More deaths than this within ``restart_window`` seconds is a crash loop: stop and exit 1.
    max_restarts: int = attrs.field(default=5, validator=[attrs.validators.instance_of(int), attrs.validators.ge(0)])
    restart_window: float = attrs.field(default=60.0, validator=_positive)
    #: The signing key shared by the workers; None: ``TRIO_MCP_SECRET_KEY`` if set, else a fresh random one.
    secret_key: str | None = attrs.field(default=None)
    #: A Redis every worker shares (``redis://host:port/db``): sessions roam between the workers (and machines),
    #: with their events and task records. None: each session stays in the worker that opened it.
    redis: str | None = attrs.field(default=None, validator=_redis_url)

    #: Each worker shows log records at this level and above on stderr (``logging.basicConfig``, which leaves a
    #: server module's own logging configuration alone): "debug" to "critical"; None configures nothing.
    log_level: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(_LOG_LEVELS))
    )
    #: A PEM certificate chain and its private key: with both, the workers serve HTTPS.
    certfile: str | None = None
    keyfile: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.certfile is None) != (self.keyfile is None):
            raise ValueError("certfile and keyfile go together: give both to serve HTTPS, or neither")
        if self.certfile is not None and self.keyfile is not None:
            server_tls_context(self.certfile, self.keyfile)  # refused here, once, rather than by every worker

    @property
    def unshared(self) -> str | None:
        """One line for an operator when the workers cannot share sessions (several, no Redis, no options
        that could give them a directory); None when they can."""
        if self.workers == 1 or self.redis is not None or self.options is not None:
            return None
        return (
            f"{self.workers} workers and no shared store: legacy-era clients (protocol 2025-11-25 and before) "
            "lose their sessions when a request reaches another worker; add --redis redis://HOST:PORT/0"
        )

    @property
    def scheme(self) -> str:
        """``https`` when the workers serve TLS, else ``http``."""
        return "https" if self.certfile is not None else "http"

    @secret_key.validator
    def _check_key(self, attribute: attrs.Attribute[str | None], value: str | None) -> None:
        if value is not None and (not isinstance(value, str) or len(value) < MIN_SECRET_KEY_LENGTH):
            raise ValueError(f"secret_key must be a string of at least {MIN_SECRET_KEY_LENGTH} characters")


class _Supervisor:
    def __init__(self, settings: WorkerSettings, sock: socket.socket) -> None:
        self.settings = settings
        self.sock = sock
        self.stopping = trio.Event()
        self.crash_loop = False
        self.processes: set[trio.Process] = set()
        self.deaths: list[float] = []
        key = settings.secret_key or os.environ.get(SECRET_KEY_ENV) or secrets.token_urlsafe(32)
        self.env = {**os.environ, SECRET_KEY_ENV: key}
        self.env.pop(REDIS_URL_ENV, None)
        if settings.redis is not None:
            self.env[REDIS_URL_ENV] = settings.redis

    def _argv(self, listen_fd: int, supervisor_fd: int, heartbeat_fd: int) -> list[str]:
        s = self.settings
        argv = [
            sys.executable,
            "-m",
            "trio_mcp.scale._worker",
            s.server,
            "--listen-fd",
            str(listen_fd),
            "--supervisor-fd",
            str(supervisor_fd),
            "--heartbeat-fd",
            str(heartbeat_fd),
            "--heartbeat-interval",
            str(s.worker_timeout / _HEARTBEATS_PER_TIMEOUT),
            "--host",
            s.host,
            "--drain",
            str(s.drain_timeout),
            "--workers",
            str(s.workers),
        ]
        if s.certfile is not None and s.keyfile is not None:
            argv += ["--certfile", s.certfile, "--keyfile", s.keyfile]
        argv += ["--log-level", s.log_level] if s.log_level else []
        return argv + (["--options", s.options] if s.options else [])

    async def run_slot(self, index: int) -> None:
        """Keep worker ``index`` running until the supervisor stops."""
        failures = 0
        while not self.stopping.is_set():
            read_end, write_end = os.pipe()  # the worker drains when the write end closes (we died)
            beat_read, beat_write = os.pipe()  # the worker's event loop writes a byte now and then
            # The worker's copy of the listening socket, ours until it is spawned: a stop closes ``self.sock``
            # meanwhile, while the spawn (in a thread) still needs the descriptor it was given.
            listen_fd = os.dup(self.sock.fileno())
            try:
                process = await trio.lowlevel.open_process(
                    self._argv(listen_fd, read_end, beat_write),
                    pass_fds=(listen_fd, read_end, beat_write),
                    env=self.env,
                )
            except BaseException:
                os.close(write_end)
                os.close(beat_read)
                raise
            finally:
                os.close(listen_fd)
                os.close(read_end)
                os.close(beat_write)
            started = trio.current_time()
            self.processes.add(process)
            if self.stopping.is_set():  # the stop began while it was starting: drain() may have missed it
                process.send_signal(signal.SIGTERM)
            try:
                async with trio.lowlevel.FdStream(beat_read) as heartbeats, trio.open_nursery() as watching:
                    watching.start_soon(self._watch, index, process, heartbeats)
                    await process.wait()
                    watching.cancel_scope.cancel()
            finally:
                self.processes.discard(process)
                os.close(write_end)
                if process.returncode is None:  # cancelled: stop now
                    process.kill()
            if self.stopping.is_set():
                return
            now = trio.current_time()
            self.deaths = [t for t in self.deaths if now - t < self.settings.restart_window] + [now]
            if len(self.deaths) > self.settings.max_restarts:
                logger.error(
                    "worker %d (pid %d) exited with %s: %d deaths within %g s, giving up",
                    index,
                    process.pid,
                    process.returncode,
                    len(self.deaths),
                    self.settings.restart_window,
                )
                self.crash_loop = True
                self.stopping.set()
                return
            failures = failures + 1 if now - started < _STABLE_SECONDS else 1
            delay = min(_MAX_BACKOFF, _FIRST_BACKOFF * 2 ** (failures - 1))
            logger.warning(
                "worker %d (pid %d) exited with %s; restarting in %g s", index, process.pid, process.returncode, delay
            )
            with trio.move_on_after(delay):
                await self.stopping.wait()

    async def _watch(self, index: int, process: trio.Process, heartbeats: trio.lowlevel.FdStream) -> None:
        """Kill the worker if its heartbeats stop for ``worker_timeout`` seconds (its pipe closing is its exit); the
        first one may take ``_STARTING`` seconds more, as the worker imports the server first."""
        silence = self.settings.worker_timeout + _STARTING
        while True:
            with trio.move_on_after(silence) as timer:
                beat = await heartbeats.receive_some(_READ_SIZE)
            if timer.cancelled_caught:
                logger.error(
                    "worker %d (pid %d) sent no heartbeat for %g s (its event loop is blocked); killing it",
                    index,
                    process.pid,
                    silence,
                )
                process.kill()
                return
            if not beat:
                return
            silence = self.settings.worker_timeout

    async def stop_on_signal(self, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
            async for signum in signals:
                logger.info("%s: draining %d workers", signal.Signals(signum).name, len(self.processes))
                self.stopping.set()
                return

    async def drain(self) -> None:
        """After ``stopping``: SIGTERM every worker, then SIGKILL those still running after the drain time."""
        await self.stopping.wait()
        for process in list(self.processes):
            process.send_signal(signal.SIGTERM)
        await trio.sleep(self.settings.drain_timeout + _EXIT_MARGIN)
        for process in list(self.processes):
            logger.error("worker pid %d did not finish draining in time; killing it", process.pid)
            process.kill()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=1024)


async def supervise_workers(
    settings: WorkerSettings, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> int:
    """Run ``settings.workers`` worker processes until SIGTERM/SIGINT (returns 0 once they have drained) or a
    crash loop (returns 1). ``task_status.started()`` gets the bound port. Must run in the main thread (it
    handles signals). Cancelling it kills the workers at once; the signals are the graceful way."""
    with _bind(settings.host, settings.port) as sock:
        supervisor = _Supervisor(settings, sock)
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.stop_on_signal)  # before the port is reported: a SIGTERM then drains
            nursery.start_soon(supervisor.drain)
            async with trio.open_nursery() as slots:  # each slot returns once stopping and its worker exited
                for index in range(settings.workers):
                    slots.start_soon(supervisor.run_slot, index)
                task_status.started(int(sock.getsockname()[1]))
                await supervisor.stopping.wait()
                sock.close()  # the workers hold their own copies until they finish
            nursery.cancel_scope.cancel()
    return 1 if supervisor.crash_loop else 0


def run_workers(server: str, **settings: object) -> int:
    """Serve ``server`` (``"package.module:attribute"``) with worker processes until SIGTERM/SIGINT; returns the
    exit status (0 after a graceful stop, 1 after a crash loop). Keyword arguments are ``WorkerSettings``
    fields (``workers``, ``host``, ``port``, ``options``, ``drain_timeout``, ``max_restarts``, ...)."""
    config = WorkerSettings(server=server, **settings)  # type: ignore[arg-type]
    with serving_console():
        if config.unshared is not None:
            logger.warning(config.unshared)
        return trio.run(supervise_workers, config)
