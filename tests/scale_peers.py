"""The real processes the scaling tests run, each on 127.0.0.1 and stopped by its test:

- a worker supervisor (``python -m trio_mcp.scale``) serving ``tests/servers/worker_app.py``;
- redis-server on a free port in a temporary directory, append-only with an fsync per write (so an
  acknowledged write survives even SIGKILL);
- HAProxy balancing round robin, without stickiness, over some backends;
- nginx in front of one server or more (round robin), configured as a test says (``trio-mcp doctor`` behind real
  proxies; session roaming with the settings docs/deployment.md gives).

tests/scale/setup.sh (run by ``make test``) installs redis-server, haproxy and nginx.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

ROOT = Path(__file__).resolve().parent.parent
BINARY = shutil.which("redis-server")
SKIP_REASON = "redis-server is not installed (make test installs it with tests/scale/setup.sh)"
HAPROXY = shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin:/usr/local/sbin")
NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")


@asynccontextmanager
async def supervisor(
    *args: str, path: str = "/mcp", env: dict[str, str] | None = None
) -> AsyncIterator[tuple[str, trio.Process]]:
    """A supervisor process serving ``worker_app``; yields its URL (ending in ``path``) and the process."""
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join((str(ROOT), str(ROOT / "tests" / "servers")))}
    environment.update(env or {})
    argv = [sys.executable, "-m", "trio_mcp.scale", *args, "--port", "0"]
    process = await trio.lowlevel.open_process(argv, stdout=-1, env=environment, cwd=str(ROOT))
    assert process.stdout is not None
    try:
        with trio.fail_after(30):
            line = b""
            while not line.endswith(b"\n"):
                chunk = await process.stdout.receive_some(1)
                assert chunk, "the supervisor exited before serving"
                line += chunk
        yield line.decode().split()[1] + path, process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


#: HAProxy lines that pin a legacy-era session to the backend that answered its ``initialize``.
STICKY = (
    "    stick-table type string len 64 size 100k expire 30m\n"
    "    stick on req.hdr(mcp-session-id)\n"
    "    stick store-response res.hdr(mcp-session-id)\n"
)


@asynccontextmanager
async def haproxy(backends: Sequence[int], directory: Path, *, sticky_sessions: bool = False) -> AsyncIterator[int]:
    """HAProxy on a free port balancing every request round robin over ``backends`` (ports); yields its port.

    ``sticky_sessions`` keeps the requests carrying an ``Mcp-Session-Id`` on the backend that issued it."""
    if HAPROXY is None:
        pytest.skip("haproxy is not installed (make test installs it with tests/scale/setup.sh)")
    port = _free_port()
    servers = "".join(f"    server b{n} 127.0.0.1:{backend}\n" for n, backend in enumerate(backends))
    config = directory / "haproxy.cfg"
    config.write_text(
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 30s\n    timeout server 30s\n"
        f"frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend workers\n"
        f"backend workers\n    balance roundrobin\n{STICKY if sticky_sessions else ''}{servers}"
    )
    async with _listening([HAPROXY, "-db", "-f", str(config)], port):
        yield port


@asynccontextmanager
async def nginx(backends: int | Sequence[int], directory: Path, directives: str = "") -> AsyncIterator[int]:
    """nginx on a free port proxying everything to ``backends`` (ports; round robin) over kept-alive HTTP/1.1
    connections, with ``directives`` added to its location (``"proxy_buffering off;"``...); yields its port. Its
    configuration, logs and buffers live in ``directory``."""
    if NGINX is None:
        pytest.skip("nginx is not installed (make test installs it with tests/scale/setup.sh)")
    port = _free_port()
    servers = " ".join(
        f"server 127.0.0.1:{backend};" for backend in ([backends] if isinstance(backends, int) else backends)
    )
    temp = " ".join(
        f"{kind}_temp_path {directory / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    config = directory / "nginx.conf"
    config.write_text(
        ("user root;\n" if os.geteuid() == 0 else "")  # its workers otherwise run as nobody, locked out of `directory`
        + f"daemon off;\nworker_processes 1;\npid {directory / 'nginx.pid'};\nerror_log {directory / 'error.log'};\n"
        "events { worker_connections 256; }\n"
        f"http {{\n  access_log off;\n  {temp}\n  upstream mcp_servers {{ {servers} keepalive 16; }}\n"
        f"  server {{\n    listen 127.0.0.1:{port};\n    location / {{\n"
        "      proxy_pass http://mcp_servers;\n      proxy_http_version 1.1;\n"
        f'      proxy_set_header Connection "";\n      proxy_set_header Host $http_host;\n      {directives}\n'
        "    }\n  }\n}\n"
    )
    async with _listening([NGINX, "-c", str(config), "-p", str(directory)], port):
        yield port


@asynccontextmanager
async def _listening(argv: list[str], port: int) -> AsyncIterator[None]:
    """Run ``argv`` until the block ends, entering the block once the program accepts connections on ``port``."""
    process = await trio.lowlevel.open_process(argv, stdin=subprocess.DEVNULL)
    try:
        with trio.fail_after(15):
            while True:
                try:
                    await (await trio.open_tcp_stream("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    assert process.returncode is None, f"{Path(argv[0]).name} exited"
                    await trio.sleep(0.02)
        yield
    finally:
        process.terminate()
        with trio.move_on_after(5):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """``tls=(cert, key)`` serves TLS only (the PING probe then only waits for the port to open)."""

    def __init__(self, directory: Path, tls: tuple[Path, Path] | None = None) -> None:
        assert BINARY is not None
        self.directory = directory
        self.port = _free_port()
        self.tls = tls
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        assert BINARY is not None
        ports = ["--port", str(self.port)]
        if self.tls:
            ports = [
                "--port",
                "0",
                "--tls-port",
                str(self.port),
                "--tls-cert-file",
                str(self.tls[0]),
                "--tls-key-file",
                str(self.tls[1]),
                "--tls-auth-clients",
                "no",
            ]
        argv = [
            BINARY,
            *ports,
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--save",
            "",
            "--protected-mode",
            "yes",
            "--logfile",
            str(self.directory / "redis.log"),
        ]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (self.directory / "redis.log").read_text()[-2000:]
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as probe:
                    if self.tls:
                        return
                    probe.sendall(b"PING\r\n")
                    if probe.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        raise TimeoutError("redis-server did not answer PING within 15 s")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process = None


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    if BINARY is None:
        pytest.skip(SKIP_REASON)
    server = RedisServer(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
