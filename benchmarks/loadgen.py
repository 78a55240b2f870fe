"""A raw JSON-RPC load generator for MCP servers: no SDK on the measuring side.

It starts a server as a child process and speaks to it over stdio pipes (newline-delimited JSON written to
the child's stdin, read from its stdout) or over HTTP/1.1 keep-alive connections to 127.0.0.1 (its own
minimal client: one ``selectors`` loop over blocking sockets, no framework, no threads), and measures:

- ``stdio_c1``, ``stdio_c64``: ``tools/call echo`` round trips per second and p50/p99 latency with 1 and 64
  requests in flight on one stdio session;
- ``http_c1``, ``http_c16``, ``http_c64``: the same over Streamable HTTP sessions (2025-11-25) with 1, 16 and
  64 concurrent clients, each on its own keep-alive connection and its own ``Mcp-Session-Id``;
- ``stateless_c1/16/64``: the same with stateless 2026-07-28 requests (``_meta`` + ``Mcp-Method`` headers);
  a server that serves both (trio_mcp) has the two measured by turns on one process, in alternating slices, so
  that their ratio is not the drift of the machine between two phases (``Counts.pair_slices``);
- the server's CPU time per call (``/proc/<pid>/stat``) and the load generator's own CPU share in each;
- ``cold_start_stdio_ms`` / ``cold_start_http_ms``: spawn to ``initialize`` response;
- ``rss_idle_kib``, ``rss_sessions_kib``, ``rss_per_session_kib``: resident memory of the HTTP server after one
  session, then with 1,000 open sessions;
- cancellation: ``notifications/cancelled`` to handler cancelled (stdio and HTTP session), and whether
  closing the HTTP connection of an in-flight request cancels its handler (session and stateless) -- read
  from the ``marker`` file the ``sleep`` tool writes (``start`` / ``cancelled`` / ``done`` with unix times),
  each cancellation sent 5 ms after the handler's ``start`` (``CANCEL_AFTER``), the median of 15 samples.

Every loop is bounded in requests and seconds, only 127.0.0.1 is contacted, and every child is stopped by
its own pid. Usage (prints one JSON document)::

    python benchmarks/loadgen.py --peer trio_mcp [--quick] [--only stdio,http,stateless,memory,cancel]
    python benchmarks/loadgen.py --peer trio_mcp --only http --profile-server /tmp/trio  # then read with pstats
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
HOST = "127.0.0.1"
SESSION_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
ECHO_TEXT = "hello, benchmark"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# ---------------------------------------------------------------------------------------------------------
# peers


@dataclass(frozen=True)
class Peer:
    """A server under test: how to start it over stdio and over HTTP (``{port}`` is filled in)."""

    name: str
    label: str
    stdio_argv: list[str]
    http_argv: list[str]
    stateless: bool  # speaks 2026-07-28 stateless requests
    version: str = ""
    missing: str | None = None  # why it cannot run here (setup not done), or None
    groups: tuple[str, ...] = ("stdio", "http", "stateless", "memory", "cancel")  # the metric groups it serves


def _interop_paths() -> dict[str, Any]:
    try:
        return json.loads((ROOT / ".interop" / "paths.json").read_text())
    except (OSError, ValueError):
        return {}


def _trio_python() -> str:
    venv = ROOT / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def peers() -> dict[str, Peer]:
    """Every peer this checkout knows, with ``missing`` set for those whose setup has not run."""
    paths = _interop_paths()
    http_tail = ["--transport", "http", "--host", HOST, "--port", "{port}"]
    py = _trio_python()
    trio_version = ""
    try:
        # An installed package has its bytecode; a checkout run with PYTHONDONTWRITEBYTECODE has none, and every
        # server started would compile trio_mcp's sources again (about 85 ms of its cold start): compile them
        # once here, as an install does.
        trio_version = subprocess.run(
            [
                py,
                "-c",
                "import compileall, os, trio_mcp; compileall.compile_dir(os.path.dirname(trio_mcp.__file__), quiet=1);"
                " print(trio_mcp.__version__)",
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    result = {
        "trio_mcp": Peer(
            "trio_mcp",
            "trio_mcp",
            [py, str(BENCH / "echo_server.py"), "--transport", "stdio"],
            [py, str(BENCH / "echo_server.py"), *http_tail],
            stateless=True,
            version=trio_version,
        ),
    }
    result["bare_trio"] = Peer(
        "bare_trio",
        "bare trio (no MCP)",
        [py, str(BENCH / "bare_trio_echo.py"), "--transport", "stdio"],
        [py, str(BENCH / "bare_trio_echo.py"), *http_tail],
        stateless=True,
        version="reference",
        groups=("stdio", "http", "stateless"),
    )
    mcp_python = paths.get("mcp_python")
    result["python_sdk"] = Peer(
        "python_sdk",
        "official Python SDK",
        [str(mcp_python), str(BENCH / "official_python_server.py"), "--transport", "stdio"],
        [str(mcp_python), str(BENCH / "official_python_server.py"), *http_tail],
        stateless=True,
        version=f"mcp {paths.get('mcp_version', '?')}",
        missing=None
        if mcp_python and Path(mcp_python).exists()
        else "the official Python SDK is not installed (run: bash benchmarks/setup.sh)",
    )
    node = paths.get("node")
    ts_sdk = BENCH / "ts" / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"
    ts_version = ""
    try:
        ts_version = json.loads(ts_sdk.read_text())["version"]
    except (OSError, ValueError, KeyError):
        pass
    result["ts_sdk"] = Peer(
        "ts_sdk",
        "official TypeScript SDK",
        [str(node), str(BENCH / "ts" / "echo_server.mjs"), "--transport", "stdio"],
        [str(node), str(BENCH / "ts" / "echo_server.mjs"), *http_tail],
        stateless=False,
        version=f"@modelcontextprotocol/sdk {ts_version or '?'}",
        missing=None
        if node and Path(node).exists() and ts_version
        else "node or the TypeScript SDK is not installed (run: bash benchmarks/setup.sh)",
    )
    return result


# ---------------------------------------------------------------------------------------------------------
# helpers


def percentile(sorted_values: list[float], q: float) -> float | None:
    """The q-quantile (0..1) of sorted values, nearest rank; None for no values."""
    if not sorted_values:
        return None
    index = min(len(sorted_values) - 1, max(0, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[index]


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def self_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_marker(path: str, word: str | tuple[str, ...], timeout: float) -> dict[str, float]:
    """Poll the sleep tool's marker file until a line starting with one of ``word`` appears (or timeout);
    returns every word seen with its time."""
    words = (word,) if isinstance(word, str) else word
    deadline = time.monotonic() + timeout
    seen: dict[str, float] = {}
    while True:
        try:
            with open(path) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) == 2:
                        seen[parts[0]] = float(parts[1])
        except FileNotFoundError:
            pass
        if any(w in seen for w in words) or time.monotonic() >= deadline:
            return seen
        time.sleep(0.0005)


#: How long a handler has waited when its cancellation is sent, counted from its ``start`` mark. How soon an idle
#: process wakes depends on how long it has been idle (on a 2-core VM 0.22 ms just after its last work, 0.29 ms
#: 3 ms after, 0.49 ms 30 ms after): sent at once, the figure moved with the marker poll's phase and with how long
#: a server went on working after its handler started; sent at a fixed wait, every server is cancelled from the
#: same idle state.
CANCEL_AFTER = 0.005


def wait_started(marker: str, after: float) -> float:
    """Wait for the sleep tool's ``start`` mark in ``marker``, then until ``after`` seconds past it; returns the time
    (``time.time()``) just before the cancellation is to be sent."""
    seen = wait_marker(marker, "start", 10.0)
    if "start" not in seen:
        raise LoadError("the sleep tool never started")
    time.sleep(max(0.0, seen["start"] + after - time.time()))
    return time.time()


def request_line(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode()


def notification_line(method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode()


INITIALIZE_PARAMS = {
    "protocolVersion": SESSION_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "trio-mcp-loadgen", "version": "1.0"},
}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "trio-mcp-loadgen", "version": "1.0"},
}

# The echo call, pre-serialised around its id so the hot loop only formats an integer.
_ECHO_HEAD = b'{"jsonrpc":"2.0","id":'
_ECHO_TAIL = (
    b',"method":"tools/call","params":{"name":"echo","arguments":{"text":' + json.dumps(ECHO_TEXT).encode() + b"}}}"
)
_MODERN_ECHO_TAIL = (
    b',"method":"tools/call","params":{"name":"echo","arguments":{"text":'
    + json.dumps(ECHO_TEXT).encode()
    + b'},"_meta":'
    + json.dumps(MODERN_META, separators=(",", ":")).encode()
    + b"}}"
)
_ECHO_CHECK = json.dumps(ECHO_TEXT).encode()


def echo_request(request_id: int, *, modern: bool = False) -> bytes:
    return _ECHO_HEAD + str(request_id).encode() + (_MODERN_ECHO_TAIL if modern else _ECHO_TAIL)


class Server:
    """A child server process, stopped by its own pid."""

    def __init__(self, argv: list[str], *, stdio: bool, log: Path) -> None:
        self.log = log
        self._log_file = open(log, "wb")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stderr=self._log_file,
            bufsize=0,
            cwd=str(ROOT),
        )
        self.pid = self.proc.pid

    def stop(self) -> None:
        proc = self.proc
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        if proc.poll() is None:
            try:
                proc.wait(timeout=0.5 if proc.stdin is not None else 0)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        if proc.stdout is not None:
            proc.stdout.close()
        self._log_file.close()

    def stderr_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:]
        except OSError:
            return ""


class LoadError(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------------------------
# stdio


class StdioClient:
    """NDJSON over a child's pipes, blocking, with every wait bounded by a selector timeout."""

    def __init__(self, server: Server) -> None:
        self.server = server
        assert server.proc.stdin is not None and server.proc.stdout is not None
        self.fd_in = server.proc.stdin.fileno()
        self.fd_out = server.proc.stdout.fileno()
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd_out, selectors.EVENT_READ)
        self.pending = b""

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self.fd_in, view)
            view = view[written:]

    def read_lines(self, timeout: float) -> list[bytes] | None:
        """Complete lines read within ``timeout`` (possibly none); None at end of stream."""
        if not self.selector.select(timeout):
            return []
        chunk = os.read(self.fd_out, 1 << 16)
        if not chunk:
            return None
        data = self.pending + chunk
        lines = data.split(b"\n")
        self.pending = lines.pop()
        return [line for line in lines if line.strip()]

    def wait_for(self, request_id: int, timeout: float) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LoadError(
                    f"no answer to request {request_id} within {timeout}s; stderr: {self.server.stderr_tail()}"
                )
            lines = self.read_lines(remaining)
            if lines is None:
                raise LoadError(f"server closed stdout; stderr: {self.server.stderr_tail()}")
            for line in lines:
                message = json.loads(line)
                if message.get("id") == request_id and "method" not in message:
                    return message

    def handshake(self, timeout: float = 60.0) -> float:
        """initialize + notifications/initialized; returns seconds from spawn to the initialize answer."""
        self.write(request_line(0, "initialize", INITIALIZE_PARAMS) + b"\n")
        answer = self.wait_for(0, timeout)
        elapsed = time.perf_counter() - self.server.started
        if "result" not in answer:
            raise LoadError(f"initialize failed: {answer}")
        self.write(notification_line("notifications/initialized") + b"\n")
        return elapsed


def run_stdio_load(
    client: StdioClient, *, in_flight: int, requests: int, seconds: float, warmup: int, first_id: int
) -> dict[str, Any]:
    """Keep ``in_flight`` echo calls outstanding until ``requests`` are answered or ``seconds`` pass.

    The first ``warmup`` answers are not measured."""
    sent_at: dict[int, float] = {}
    latencies: list[float] = []
    next_id = first_id
    total = warmup + requests
    sent = answered = errors = 0
    perf = time.perf_counter
    loads = json.loads

    def send(count: int) -> None:
        nonlocal next_id, sent
        batch = []
        now = perf()
        for _ in range(count):
            sent_at[next_id] = now
            batch.append(echo_request(next_id))
            next_id += 1
        sent += count
        client.write(b"\n".join(batch) + b"\n")

    send(min(in_flight, total))
    measure_start = perf()
    cpu_server = proc_cpu_seconds(client.server.pid)
    cpu_self = self_cpu_seconds()
    measured_from = 0
    hard_deadline = time.monotonic() + seconds + 30.0
    deadline = None if warmup else time.monotonic() + seconds
    while answered < sent:
        lines = client.read_lines(max(0.0, hard_deadline - time.monotonic()))
        if lines is None:
            raise LoadError(f"server closed stdout; stderr: {client.server.stderr_tail()}")
        if not lines and time.monotonic() >= hard_deadline:
            raise LoadError(f"{sent - answered} requests unanswered at the deadline")
        now = perf()
        fresh = 0
        for line in lines:
            message = loads(line)
            started = sent_at.pop(message.get("id"), None)
            if started is None:
                continue  # a notification, or something not ours
            answered += 1
            result = message.get("result")
            if result is None or result.get("content", [{}])[0].get("text") != ECHO_TEXT:
                errors += 1
            if answered > warmup:
                latencies.append(now - started)
            elif answered == warmup:
                measure_start = now
                measured_from = answered
                cpu_server = proc_cpu_seconds(client.server.pid)
                cpu_self = self_cpu_seconds()
                deadline = time.monotonic() + seconds
            fresh += 1
        more = min(fresh, total - sent)
        if deadline is not None and time.monotonic() >= deadline:
            more = 0
        if more > 0:
            send(more)
    elapsed = perf() - measure_start
    return _load_summary(
        latencies,
        answered - measured_from,
        elapsed,
        proc_cpu_seconds(client.server.pid) - cpu_server,
        self_cpu_seconds() - cpu_self,
        sent=sent,
        answered=answered,
        errors=errors,
        concurrency=in_flight,
    )


def _load_summary(
    latencies: list[float], calls: int, elapsed: float, server_cpu: float, self_cpu: float, **extra: Any
) -> dict[str, Any]:
    latencies.sort()
    p50 = percentile(latencies, 0.50)
    p99 = percentile(latencies, 0.99)
    return {
        "calls_per_s": calls / elapsed if elapsed > 0 else None,
        "p50_ms": p50 * 1000 if p50 is not None else None,
        "p99_ms": p99 * 1000 if p99 is not None else None,
        "server_cpu_us_per_call": server_cpu / calls * 1e6 if calls else None,
        "server_cpu_share": server_cpu / elapsed if elapsed > 0 else None,
        "loadgen_cpu_share": self_cpu / elapsed if elapsed > 0 else None,
        "measured_calls": calls,
        "measured_s": elapsed,
        **extra,
    }


def stdio_cancel(
    client: StdioClient, request_id: int, marker_dir: Path, *, after: float = CANCEL_AFTER, seconds: float = 10.0
) -> dict[str, Any]:
    """A sleep call cancelled with notifications/cancelled ``after`` seconds into its handler."""
    marker = str(marker_dir / f"stdio-cancel-{request_id}")
    client.write(
        request_line(request_id, "tools/call", {"name": "sleep", "arguments": {"seconds": seconds, "marker": marker}})
        + b"\n"
    )
    sent = wait_started(marker, after)
    client.write(notification_line("notifications/cancelled", {"requestId": request_id, "reason": "benchmark"}) + b"\n")
    seen = wait_marker(marker, ("cancelled", "done"), seconds + 5.0)
    cancelled = "cancelled" in seen
    return {"cancelled": cancelled, "latency_ms": (seen["cancelled"] - sent) * 1000 if cancelled else None}


def answered_any(client: StdioClient, request_ids: Iterable[int], wait: float = 0.2) -> bool:
    """Whether any of ``request_ids`` (cancelled: no response is owed) was answered; what arrives within ``wait``
    seconds is read, then dropped."""
    ids = set(request_ids)
    answered = False
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        lines = client.read_lines(max(0.0, deadline - time.monotonic()))
        if not lines:
            break
        answered = answered or any(json.loads(line).get("id") in ids for line in lines)
    return answered


# ---------------------------------------------------------------------------------------------------------
# HTTP/1.1


class HttpResponse:
    __slots__ = ("status", "headers", "body")

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def messages(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages in a JSON or SSE body."""
        if "text/event-stream" in self.headers.get("content-type", ""):
            found = []
            for event in self.body.replace(b"\r\n", b"\n").split(b"\n\n"):
                data = b"\n".join(line[5:].lstrip(b" ") for line in event.split(b"\n") if line.startswith(b"data:"))
                if data.strip():
                    found.append(json.loads(data))
            return found
        if not self.body.strip():
            return []
        decoded = json.loads(self.body)
        return decoded if isinstance(decoded, list) else [decoded]

    def answer(self, request_id: int) -> dict[str, Any]:
        for message in self.messages():
            if message.get("id") == request_id and "method" not in message:
                return message
        raise LoadError(f"HTTP {self.status}: no answer to request {request_id} in {self.body[:300]!r}")


class HttpConnection:
    """One keep-alive HTTP/1.1 connection to the server, with an incremental response parser."""

    def __init__(self, port: int, timeout: float = 30.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.host = f"{HOST}:{port}".encode()
        self.buffer = bytearray()
        self._status = 0
        self._headers: dict[str, str] | None = None
        self._length = -1  # content-length, or -1 for chunked, -2 for until-close
        self._chunks: list[bytes] = []
        self.session_id: str | None = None
        self.closed = False

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()

    def abort(self) -> None:
        """Close abruptly (RST), as a client that gives up does."""
        if not self.closed:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.close()

    def post(self, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        head = [
            b"POST /mcp HTTP/1.1",
            b"Host: " + self.host,
            b"Content-Type: application/json",
            b"Accept: application/json, text/event-stream",
            b"Content-Length: " + str(len(body)).encode(),
        ]
        if self.session_id is not None:
            head.append(b"Mcp-Session-Id: " + self.session_id.encode())
            head.append(b"MCP-Protocol-Version: " + SESSION_VERSION.encode())
        head.extend(name + b": " + value for name, value in headers)
        self.sock.sendall(b"\r\n".join(head) + b"\r\n\r\n" + body)

    def feed(self, data: bytes) -> HttpResponse | None:
        """Take received bytes; a complete response when one is done (one request is outstanding at a time)."""
        self.buffer += data
        return self._parse()

    def _parse(self) -> HttpResponse | None:
        buffer = self.buffer
        if self._headers is None:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                return None
            lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            del buffer[: end + 4]
            self._status = int(lines[0].split(" ", 2)[1])
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            self._headers = headers
            if "content-length" in headers:
                self._length = int(headers["content-length"])
            elif "chunked" in headers.get("transfer-encoding", "").lower():
                self._length = -1
            elif self._status in (204, 304) or self._status < 200:
                self._length = 0
            else:
                self._length = -2
            self._chunks = []
        if self._length >= 0:
            if len(buffer) < self._length:
                return None
            body = bytes(buffer[: self._length])
            del buffer[: self._length]
            return self._done(body)
        if self._length == -2:
            return None  # read until close: finished by ``eof()``
        while True:  # chunked
            line_end = buffer.find(b"\r\n")
            if line_end < 0:
                return None
            size = int(bytes(buffer[:line_end]).split(b";")[0], 16)
            if size == 0:
                trailer_end = buffer.find(b"\r\n\r\n", line_end)
                if buffer[line_end : line_end + 4] == b"\r\n\r\n":
                    del buffer[: line_end + 4]
                elif trailer_end >= 0:
                    del buffer[: trailer_end + 4]
                else:
                    return None
                return self._done(b"".join(self._chunks))
            if len(buffer) < line_end + 2 + size + 2:
                return None
            self._chunks.append(bytes(buffer[line_end + 2 : line_end + 2 + size]))
            del buffer[: line_end + 2 + size + 2]

    def _done(self, body: bytes) -> HttpResponse:
        assert self._headers is not None
        response = HttpResponse(self._status, self._headers, body)
        self._headers = None
        self._chunks = []
        return response

    def eof(self) -> HttpResponse | None:
        if self._headers is not None and self._length == -2:
            return self._done(bytes(self.buffer))
        return None

    def receive(self, timeout: float = 30.0) -> HttpResponse:
        """Block until the response to the request just sent is complete."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LoadError("HTTP response timed out")
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                raise LoadError("HTTP response timed out") from None
            if not data:
                response = self.eof()
                if response is None:
                    raise LoadError("the server closed the connection mid-response")
                self.close()
                return response
            response = self.feed(data)
            if response is not None:
                return response

    def roundtrip(
        self, body: bytes, headers: Iterable[tuple[bytes, bytes]] = (), timeout: float = 30.0
    ) -> HttpResponse:
        self.post(body, headers)
        return self.receive(timeout)

    def open_session(self, timeout: float = 30.0) -> None:
        """initialize + notifications/initialized; later posts carry the session id."""
        self.session_id = None
        response = self.roundtrip(request_line(0, "initialize", INITIALIZE_PARAMS), timeout=timeout)
        if response.status != 200 or "result" not in response.answer(0):
            raise LoadError(f"initialize failed: HTTP {response.status} {response.body[:300]!r}")
        session_id = response.headers.get("mcp-session-id")
        if not session_id:
            raise LoadError("initialize answered without an Mcp-Session-Id")
        self.session_id = session_id
        response = self.roundtrip(notification_line("notifications/initialized"), timeout=timeout)
        if response.status not in (200, 202, 204):
            raise LoadError(f"notifications/initialized got HTTP {response.status}")


MODERN_ECHO_HEADERS = (
    (b"MCP-Protocol-Version", MODERN_VERSION.encode()),
    (b"Mcp-Method", b"tools/call"),
    (b"Mcp-Name", b"echo"),
)


def connect_when_ready(port: int, timeout: float) -> HttpConnection:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return HttpConnection(port)
        except OSError:
            if time.monotonic() >= deadline:
                raise LoadError(f"nothing listens on port {port} after {timeout}s") from None
            time.sleep(0.002)


def start_http(
    peer: Peer, log: Path, timeout: float = 60.0, kind: str = "load"
) -> tuple[Server, int, HttpConnection, float]:
    """Start the peer's HTTP server; returns it, its port, a connection with an open session, and the
    cold start (spawn to initialize answer, seconds)."""
    port = free_port()
    argv = [arg.replace("{port}", str(port)).replace("{kind}", kind) for arg in peer.http_argv]
    server = Server(argv, stdio=False, log=log)
    try:
        conn = connect_when_ready(port, timeout)
        conn.open_session(timeout)
        cold = time.perf_counter() - server.started
    except BaseException:
        server.stop()
        raise
    return server, port, conn, cold


def run_http_load(
    server: Server, port: int, *, clients: int, modern: bool, requests: int, seconds: float, warmup: int
) -> dict[str, Any]:
    """``clients`` keep-alive connections (each its own session unless ``modern``), each with one echo call
    outstanding, until ``requests`` are answered or ``seconds`` pass; the first ``warmup`` are not measured."""
    connections = _http_clients(port, clients, modern=modern)
    try:
        return _drive_http(
            server, connections, modern=modern, requests=requests, seconds=seconds, warmup=warmup
        ).summary()
    finally:
        for conn in connections:
            conn.close()


def run_http_pair(
    server: Server, port: int, *, clients: int, requests: int, seconds: float, warmup: int, slices: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The session and the stateless load of ``run_http_load`` measured by turns on one server, to compare the two
    paths: ``clients`` connections of each, ``warmup`` calls on each, then ``slices`` slices of ``seconds / 2``
    for each path (``requests`` calls in all at most), alternating which goes first. Whatever drifts on the
    machine meanwhile moves both alike. Returns (sessions, stateless)."""
    sessions = _http_clients(port, clients, modern=False)
    try:
        stateless = _http_clients(port, clients, modern=True)
        try:
            sides = [(sessions, False, Measured()), (stateless, True, Measured())]
            for connections, modern, total in sides:  # warm-up calls count as sent, not as measured
                total.add(_drive_http(server, connections, modern=modern, requests=0, seconds=seconds, warmup=warmup))
            for i in range(slices):
                cap = requests * (i + 1) // slices - requests * i // slices
                for connections, modern, total in sides if i % 2 == 0 else reversed(sides):
                    total.add(
                        _drive_http(server, connections, modern=modern, requests=cap, seconds=seconds / 2, warmup=0)
                    )
            return sides[0][2].summary(), sides[1][2].summary()
        finally:
            for conn in stateless:
                conn.close()
    finally:
        for conn in sessions:
            conn.close()


def _http_clients(port: int, clients: int, *, modern: bool) -> list[HttpConnection]:
    """``clients`` keep-alive connections, each with a session of its own unless ``modern``."""
    connections: list[HttpConnection] = []
    try:
        for _ in range(clients):
            conn = HttpConnection(port)
            connections.append(conn)
            if not modern:
                conn.open_session()
    except BaseException:
        for conn in connections:
            conn.close()
        raise
    return connections


@dataclass
class Measured:
    """What one or more load slices measured, to be summed over the slices of a phase."""

    latencies: list[float] = field(default_factory=list)
    calls: int = 0
    elapsed: float = 0.0
    server_cpu: float = 0.0
    self_cpu: float = 0.0
    sent: int = 0
    answered: int = 0
    errors: int = 0
    concurrency: int = 0

    def add(self, other: Measured) -> None:
        self.latencies += other.latencies
        self.calls += other.calls
        self.elapsed += other.elapsed
        self.server_cpu += other.server_cpu
        self.self_cpu += other.self_cpu
        self.sent += other.sent
        self.answered += other.answered
        self.errors += other.errors
        self.concurrency = other.concurrency

    def summary(self) -> dict[str, Any]:
        return _load_summary(
            self.latencies,
            self.calls,
            self.elapsed,
            self.server_cpu,
            self.self_cpu,
            sent=self.sent,
            answered=self.answered,
            errors=self.errors,
            concurrency=self.concurrency,
        )


#: Request ids of the HTTP loads: a session driven by turns (``run_http_pair``) never sees one twice.
_HTTP_IDS = itertools.count(1)


def _drive_http(
    server: Server, connections: list[HttpConnection], *, modern: bool, requests: int, seconds: float, warmup: int
) -> Measured:
    selector = selectors.DefaultSelector()
    perf = time.perf_counter
    started: dict[HttpConnection, float] = {}
    ids = _HTTP_IDS
    total = warmup + requests
    sent = answered = errors = 0
    latencies: list[float] = []
    extra_headers = MODERN_ECHO_HEADERS if modern else ()

    def send(conn: HttpConnection) -> None:
        nonlocal sent
        started[conn] = perf()
        conn.post(echo_request(next(ids), modern=modern), extra_headers)
        sent += 1

    for conn in connections:
        conn.sock.settimeout(None)
        selector.register(conn.sock, selectors.EVENT_READ, conn)
        if sent < total:
            send(conn)
    measure_start = perf()
    cpu_server = proc_cpu_seconds(server.pid)
    cpu_self = self_cpu_seconds()
    measured_from = 0
    deadline = None if warmup else time.monotonic() + seconds
    hard_deadline = time.monotonic() + seconds + 30.0
    check = _ECHO_CHECK
    try:
        while answered < sent:
            events = selector.select(max(0.0, hard_deadline - time.monotonic()))
            if not events:
                raise LoadError(f"{sent - answered} HTTP requests unanswered at the deadline")
            for key, _ in events:
                conn = key.data
                data = conn.sock.recv(1 << 16)
                response = conn.feed(data) if data else conn.eof()
                if not data and response is None:
                    raise LoadError(f"the server closed a connection mid-request; stderr: {server.stderr_tail()}")
                if response is None:
                    continue
                now = perf()
                answered += 1
                if response.status != 200 or check not in response.body or b'"result"' not in response.body:
                    errors += 1
                    if errors == 1:
                        print(
                            f"loadgen: unexpected answer HTTP {response.status} {response.body[:300]!r}",
                            file=sys.stderr,
                        )
                if answered > warmup:
                    latencies.append(now - started.pop(conn))
                elif answered == warmup:
                    measure_start = now
                    measured_from = answered
                    cpu_server = proc_cpu_seconds(server.pid)
                    cpu_self = self_cpu_seconds()
                    deadline = time.monotonic() + seconds
                if not data:
                    selector.unregister(conn.sock)
                    continue
                if sent < total and (deadline is None or time.monotonic() < deadline):
                    send(conn)
    finally:
        selector.close()
    elapsed = perf() - measure_start
    return Measured(
        latencies,
        answered - measured_from,
        elapsed,
        proc_cpu_seconds(server.pid) - cpu_server,
        self_cpu_seconds() - cpu_self,
        sent=sent,
        answered=answered,
        errors=errors,
        concurrency=len(connections),
    )


def open_many_sessions(port: int, count: int, *, connections: int = 8, timeout: float = 120.0) -> list[str]:
    """Open ``count`` sessions (initialize + initialized) over a few keep-alive connections, leaving them
    open; returns their ids."""
    conns = [HttpConnection(port) for _ in range(min(connections, count))]
    opened = 0
    ids: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        # Interleave connections so the server sees concurrent handshakes, one request per connection at a time.
        phase = {conn: 0 for conn in conns}
        remaining = count
        selector = selectors.DefaultSelector()
        for conn in conns:
            conn.sock.settimeout(None)
            selector.register(conn.sock, selectors.EVENT_READ, conn)
            conn.session_id = None
            conn.post(request_line(0, "initialize", INITIALIZE_PARAMS))
            remaining -= 1
        active = len(conns)
        while active:
            events = selector.select(max(0.0, deadline - time.monotonic()))
            if not events:
                raise LoadError(f"opening sessions timed out after {opened}")
            for key, _ in events:
                conn = key.data
                data = conn.sock.recv(1 << 16)
                if not data:
                    raise LoadError("the server closed a connection while sessions were opening")
                response = conn.feed(data)
                if response is None:
                    continue
                if phase[conn] == 0:
                    session_id = response.headers.get("mcp-session-id")
                    if response.status != 200 or not session_id:
                        raise LoadError(
                            f"initialize #{opened + 1} failed: HTTP {response.status} {response.body[:200]!r}"
                        )
                    conn.session_id = session_id
                    conn.post(notification_line("notifications/initialized"))
                    phase[conn] = 1
                else:
                    if response.status not in (200, 202, 204):
                        raise LoadError(f"notifications/initialized got HTTP {response.status}")
                    opened += 1
                    ids.append(conn.session_id or "")
                    if remaining > 0:
                        remaining -= 1
                        conn.session_id = None
                        conn.post(request_line(0, "initialize", INITIALIZE_PARAMS))
                        phase[conn] = 0
                    else:
                        selector.unregister(conn.sock)
                        active -= 1
        selector.close()
    finally:
        for conn in conns:
            conn.close()
    return ids


def http_cancel_notification(
    port: int, marker_dir: Path, request_id: int, *, after: float = CANCEL_AFTER, seconds: float = 10.0
) -> dict[str, Any]:
    """A session's in-flight sleep call, cancelled by a notifications/cancelled POST on another connection ``after``
    seconds into its handler."""
    marker = str(marker_dir / f"http-cancel-{request_id}")
    caller = HttpConnection(port)
    other = HttpConnection(port)
    try:
        caller.open_session()
        other.session_id = caller.session_id
        caller.post(
            request_line(
                request_id, "tools/call", {"name": "sleep", "arguments": {"seconds": seconds, "marker": marker}}
            )
        )
        sent = wait_started(marker, after)
        response = other.roundtrip(
            notification_line("notifications/cancelled", {"requestId": request_id, "reason": "benchmark"})
        )
        seen = wait_marker(marker, ("cancelled", "done"), seconds + 5.0)
    finally:
        caller.abort()
        other.close()
    cancelled = "cancelled" in seen
    return {
        "cancelled": cancelled,
        "latency_ms": (seen["cancelled"] - sent) * 1000 if cancelled else None,
        "notification_status": response.status,
    }


def http_cancel_by_close(
    port: int, marker_dir: Path, request_id: int, *, modern: bool, after: float = CANCEL_AFTER, seconds: float = 1.0
) -> dict[str, Any]:
    """Close the connection of an in-flight sleep call ``after`` seconds into its handler: is the handler cancelled,
    and how fast?"""
    marker = str(marker_dir / f"http-close-{'modern' if modern else 'session'}-{request_id}")
    conn = HttpConnection(port)
    try:
        arguments = {"seconds": seconds, "marker": marker}
        if modern:
            body = request_line(
                request_id, "tools/call", {"name": "sleep", "arguments": arguments, "_meta": MODERN_META}
            )
            conn.post(
                body,
                (
                    (b"MCP-Protocol-Version", MODERN_VERSION.encode()),
                    (b"Mcp-Method", b"tools/call"),
                    (b"Mcp-Name", b"sleep"),
                ),
            )
        else:
            conn.open_session()
            conn.post(request_line(request_id, "tools/call", {"name": "sleep", "arguments": arguments}))
        closed = wait_started(marker, after)
    except BaseException:
        conn.close()
        raise
    conn.close()
    seen = wait_marker(marker, ("cancelled", "done"), seconds + 5.0)
    cancelled = "cancelled" in seen
    return {
        "cancelled": cancelled,
        "latency_ms": (seen["cancelled"] - closed) * 1000 if cancelled else None,
        "outcome": "cancelled" if cancelled else ("done" if "done" in seen else "nothing"),
    }


# ---------------------------------------------------------------------------------------------------------
# one run of every metric for one peer


@dataclass
class Counts:
    """How much load each metric sends; ``quick`` is for smoke tests."""

    requests: int = 20000  # cap on measured calls per throughput phase
    seconds: float = 1.5  # cap on measured time per throughput phase
    warmup: int = 300  # calls before measuring starts
    sessions: int = 1000  # sessions for the memory metric
    cancels: int = 15  # cancellation samples per transport (a run's figure is their median)
    cancel_after: float = CANCEL_AFTER  # seconds a handler has waited when it is cancelled
    # A peer with both HTTP paths has them measured by turns (``run_http_pair``): this many slices of
    # ``seconds / 2`` each, so that a difference of a few per cent between them shows through the machine's drift.
    pair_slices: int = 6

    @classmethod
    def quick(cls) -> Counts:
        return cls(requests=200, seconds=1.0, warmup=20, sessions=20, cancels=1, pair_slices=2)


ALL_GROUPS = ("stdio", "http", "stateless", "memory", "cancel")


def _median(values: list[float]) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def with_profile(peer: Peer, prefix: str) -> Peer:
    """The peer with each of its servers run under cProfile (``--profile PREFIX-<kind>.prof``); only the
    trio_mcp echo server and the bare trio echo accept that option."""
    if "--profile" in peer.stdio_argv or peer.name not in ("trio_mcp", "bare_trio"):
        raise LoadError(f"{peer.name} cannot be profiled from here")
    return replace(
        peer,
        stdio_argv=[*peer.stdio_argv, "--profile", f"{prefix}-stdio.prof"],
        http_argv=[*peer.http_argv, "--profile", f"{prefix}-http-{{kind}}.prof"],
    )


def run_peer(
    peer: Peer, counts: Counts, groups: Iterable[str] = ALL_GROUPS, *, log: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """Every metric for one peer, once; returns {metric: value or dict}."""
    if peer.missing:
        raise LoadError(peer.missing)
    groups = set(groups) & set(peer.groups)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix=f"mcp-bench-{peer.name}-") as tmp:
        tmpdir = Path(tmp)
        if groups & {"stdio", "cancel"}:
            server = Server(peer.stdio_argv, stdio=True, log=tmpdir / "stdio.log")
            try:
                client = StdioClient(server)
                out["cold_start_stdio_ms"] = client.handshake() * 1000
                next_id = 1
                if "stdio" in groups:
                    for in_flight in (1, 64):
                        log(f"{peer.name}: stdio, {in_flight} in flight")
                        out[f"stdio_c{in_flight}"] = run_stdio_load(
                            client,
                            in_flight=in_flight,
                            requests=counts.requests,
                            seconds=counts.seconds,
                            warmup=counts.warmup,
                            first_id=next_id,
                        )
                        next_id += counts.requests + counts.warmup + 1
                if "cancel" in groups:
                    log(f"{peer.name}: stdio cancellation")
                    ids = range(next_id, next_id + counts.cancels)
                    samples = [stdio_cancel(client, i, tmpdir, after=counts.cancel_after) for i in ids]
                    out["cancel_stdio"] = _cancel_summary(samples, responded=answered_any(client, ids))
            finally:
                server.stop()
        if "memory" in groups:
            log(f"{peer.name}: memory, {counts.sessions} sessions")
            server, port, conn, cold = start_http(peer, tmpdir / "http-memory.log", kind="memory")
            try:
                out["cold_start_http_ms"] = cold * 1000
                conn.roundtrip(echo_request(1))  # one call, so lazily loaded code is in
                conn.close()
                time.sleep(0.5)
                idle = proc_rss_kib(server.pid)
                opened = 1 + len(open_many_sessions(port, counts.sessions - 1))
                time.sleep(0.5)
                loaded = proc_rss_kib(server.pid)
                out["rss_idle_kib"] = idle
                out["rss_sessions_kib"] = loaded
                out["sessions_opened"] = opened
                out["rss_per_session_kib"] = (loaded - idle) / max(1, opened - 1)
            finally:
                server.stop()
        if groups & {"http", "stateless", "cancel"}:
            server, port, conn, cold = start_http(peer, tmpdir / "http.log")
            conn.close()
            try:
                out.setdefault("cold_start_http_ms", cold * 1000)
                paired = {"http", "stateless"} <= groups and peer.stateless
                for clients in (1, 16, 64) if paired else ():
                    log(f"{peer.name}: http and stateless by turns, {clients} clients")
                    out[f"http_c{clients}"], out[f"stateless_c{clients}"] = run_http_pair(
                        server,
                        port,
                        clients=clients,
                        requests=counts.requests,
                        seconds=counts.seconds,
                        warmup=counts.warmup,
                        slices=counts.pair_slices,
                    )
                for modern in () if paired else (False, True):
                    group = "stateless" if modern else "http"
                    if group not in groups or (modern and not peer.stateless):
                        continue
                    for clients in (1, 16, 64):
                        log(f"{peer.name}: {group}, {clients} clients")
                        out[f"{group}_c{clients}"] = run_http_load(
                            server,
                            port,
                            clients=clients,
                            modern=modern,
                            requests=counts.requests,
                            seconds=counts.seconds,
                            warmup=counts.warmup,
                        )
                if "cancel" in groups:
                    log(f"{peer.name}: HTTP cancellation")
                    after = counts.cancel_after
                    samples = [
                        http_cancel_notification(port, tmpdir, 100 + i, after=after) for i in range(counts.cancels)
                    ]
                    out["cancel_http_notification"] = _cancel_summary(samples)
                    # One sample: a handler that closing does not cancel runs on to its end (a second).
                    out["cancel_http_close_session"] = _cancel_summary(
                        [http_cancel_by_close(port, tmpdir, 200, modern=False, after=after)]
                    )
                    if peer.stateless:
                        out["cancel_http_close_stateless"] = _cancel_summary(
                            [
                                http_cancel_by_close(port, tmpdir, 300 + i, modern=True, after=after)
                                for i in range(counts.cancels)
                            ]
                        )
            finally:
                server.stop()
    return out


def _cancel_summary(samples: list[dict[str, Any]], *, responded: bool = False) -> dict[str, Any]:
    return {
        "cancelled": all(s["cancelled"] for s in samples),
        "cancelled_count": sum(1 for s in samples if s["cancelled"]),
        "samples": len(samples),
        "latency_ms": _median([s["latency_ms"] for s in samples if s["latency_ms"] is not None]),
        "responded": responded,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", default="trio_mcp", help=f"one of: {', '.join(peers())}")
    parser.add_argument("--quick", action="store_true", help="tiny counts (a smoke test), one sample each")
    parser.add_argument(
        "--only",
        default=",".join(ALL_GROUPS),
        help=f"comma-separated metric groups (default: all of {','.join(ALL_GROUPS)})",
    )
    parser.add_argument("--requests", type=int, help="cap on measured calls per throughput phase")
    parser.add_argument("--seconds", type=float, help="cap on measured seconds per throughput phase")
    parser.add_argument("--sessions", type=int, help="sessions opened for the memory metric")
    parser.add_argument(
        "--profile-server",
        metavar="PREFIX",
        help="run the (Python) servers under cProfile, writing PREFIX-stdio.prof, "
        "PREFIX-http-load.prof and PREFIX-http-memory.prof",
    )
    args = parser.parse_args(argv)
    known = peers()
    if args.peer not in known:
        parser.error(f"unknown peer {args.peer!r}; known: {', '.join(known)}")
    counts = Counts.quick() if args.quick else Counts()
    if args.requests is not None:
        counts.requests = args.requests
    if args.seconds is not None:
        counts.seconds = args.seconds
    if args.sessions is not None:
        counts.sessions = max(2, args.sessions)
    groups = [g.strip() for g in args.only.split(",") if g.strip()]
    unknown = set(groups) - set(ALL_GROUPS)
    if unknown:
        parser.error(f"unknown metric groups: {', '.join(sorted(unknown))}")
    peer = known[args.peer]
    if peer.missing:
        print(json.dumps({"peer": peer.name, "skipped": peer.missing}))
        return 3
    if args.profile_server:
        peer = with_profile(peer, str(Path(args.profile_server).resolve()))
    result = run_peer(peer, counts, groups, log=lambda line: print(line, file=sys.stderr))
    print(json.dumps({"peer": peer.name, "version": peer.version, "results": result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
