"""``trio-mcp doctor URL``: probe an HTTP deployment for what breaks MCP clients, and say how to fix each finding.

Each check sends a few ordinary requests (the handshake, a preflight, a GET stream) and judges the answers the
way a host would; nothing is changed on the server, and the session it opens is deleted at the end. A check the
deployment does not take part in (no authorization, no CORS) is reported as "not offered", not as a failure.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from typing import Final, Literal
from urllib.parse import urlsplit, urlunsplit

import attrs
import trio

from .._wire.features import Feature, has
from .._wire.versions import LEGACY_VERSIONS, MODERN_VERSIONS
from ..transports._client.h11client import ClientResponse, HttpClient, HttpError, HttpTimeouts
from ._connect import parse_headers
from ._exit import CONNECTION, OK, TOOL_ERROR, CliError

__all__ = ["Finding", "doctor_command"]

Status = Literal["ok", "warn", "fail", "not offered", "info"]
_FOREIGN_ORIGIN: Final = "https://doctor-probe.invalid"
_ACCEPT: Final = "application/json, text/event-stream"
_LATEST: Final = LEGACY_VERSIONS[-1]
#: The revision spoken over the HTTP+SSE transport, tried at the sibling ``/sse`` endpoint.
_SSE_VERSION: Final = next(v for v in LEGACY_VERSIONS if has(v, Feature.HTTP_SSE))


@attrs.frozen
class Finding:
    """One result: which check, how it went, what was seen, and (unless ok) how to fix it."""

    check: str
    status: Status
    detail: str
    fix: str = ""


def _initialize_body(version: str = _LATEST) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "trio-mcp-doctor", "version": "1"},
            },
        }
    ).encode()


class _Probe:
    """The doctor's HTTP client: one URL, the user's headers, every request bounded."""

    def __init__(self, http: HttpClient, url: str, headers: dict[str, str], timeout: float) -> None:
        self.http = http
        self.url = url
        self.headers = headers
        self.timeout = timeout

    async def send(
        self,
        method: str,
        *,
        url: str | None = None,
        headers: dict[str, str] | None = None,
        body: bytes = b"",
        keep_auth: bool = True,
        read: bool = True,
    ) -> tuple[ClientResponse, bytes]:
        merged = {k: v for k, v in self.headers.items() if keep_auth or k.lower() != "authorization"}
        merged.update(headers or {})
        if body:
            merged.setdefault("Content-Type", "application/json")
        with trio.fail_after(self.timeout):
            response = await self.http.request(method, url or self.url, headers=list(merged.items()), body=body)
            if not read:
                return response, b""
            async with response:
                return response, await response.read()

    async def post(self, body: bytes, **headers: str) -> tuple[ClientResponse, bytes]:
        return await self.send("POST", headers={"Accept": _ACCEPT, **headers}, body=body)


#: How to let an event stream through a proxy: what nginx and HAProxy need (docs/deployment.md says why).
_BUFFERING_FIX: Final = (
    "stop the proxy buffering text/event-stream responses. nginx: `proxy_buffering off;` in the MCP location "
    "(or drop `proxy_ignore_headers X-Accel-Buffering`, since the server sends X-Accel-Buffering: no), gzip off "
    "for text/event-stream, and `proxy_read_timeout` above 15 s; HAProxy: leave text/event-stream out of "
    "`compression type`, and `timeout server`/`timeout client` above 15 s"
)
_SESSION_HEADER_FIX: Final = (
    "pass Mcp-Session-Id through the proxy both ways (nginx: no `proxy_hide_header Mcp-Session-Id`; "
    "HAProxy: no `http-response del-header Mcp-Session-Id`), and expose it to browsers "
    "(Access-Control-Expose-Headers)"
)
_TOKEN_FIX: Final = (
    "pass an access token: trio-mcp doctor URL -H 'Authorization: Bearer TOKEN' (for a local server without an "
    "authorization server, see 'Tokens for local development' in docs/protecting-a-server.md)"
)


async def _attempt(probe: _Probe, url: str, version: str) -> str | None:
    """None when ``version`` is spoken at ``url`` (the handshake and a request after it), else why not."""
    from ..client import open_http_client
    from ..errors import TrioMcpError

    try:
        with trio.fail_after(probe.timeout):
            async with open_http_client(url, headers=probe.headers, protocol_version=version) as client:
                if client.protocol_version != version:
                    return "negotiated"
                await client.ping()  # a session the proxy broke fails here, not in the handshake
                return None
    except trio.TooSlowError:
        return "timeout"
    except (TrioMcpError, OSError, ValueError) as exc:
        return str(exc) or type(exc).__name__


async def _revisions(probe: _Probe) -> list[Finding]:
    spoken: list[str] = []
    failures: dict[str, str] = {}
    for version in (*LEGACY_VERSIONS, *MODERN_VERSIONS):
        failure = await _attempt(probe, probe.url, version)
        if failure is None:
            spoken.append(version)
        else:
            failures[version] = failure
    legacy_url = _sibling_sse_url(probe.url)
    if not any(has(v, Feature.HTTP_SSE) for v in spoken) and legacy_url is not None:
        if await _attempt(probe, legacy_url, _SSE_VERSION) is None:
            spoken.insert(0, f"{_SSE_VERSION} (HTTP+SSE at {legacy_url})")
    if not spoken:
        return [await _nothing_spoken(probe)]
    eras = []
    if any(v in LEGACY_VERSIONS for v in spoken):
        eras.append("legacy (initialize)")
    if any(v in MODERN_VERSIONS for v in spoken):
        eras.append("modern (2026-07-28)")
    findings = [Finding("revisions", "ok", f"speaks {', '.join(spoken)}; eras: {', '.join(eras)}")]
    if _is_sse_endpoint(probe.url):
        parts = urlsplit(probe.url)
        streamable = urlunsplit((*parts[:2], parts.path.rstrip("/")[: -len("sse")] + "mcp", parts.query, ""))
        findings.append(
            Finding(
                "revisions",
                "info",
                "this is the HTTP+SSE endpoint of the 2024-11-05 revision; newer revisions use Streamable HTTP, "
                "at another URL",
                f"check the Streamable HTTP endpoint (trio-mcp doctor {streamable}) and point newer clients there",
            )
        )
        return findings
    failure = failures.get(_LATEST)
    if failure == "timeout":
        findings.append(
            Finding(
                "revisions",
                "fail",
                f"{_LATEST} did not complete within {probe.timeout:g} s: its client waits for the session's event "
                "stream, which never started while ordinary requests are answered (a buffering proxy)",
                _BUFFERING_FIX,
            )
        )
    elif failure is not None and failure != "negotiated":
        fix = _SESSION_HEADER_FIX if "mcp-session-id" in failure.lower() else "check the server's logs"
        findings.append(Finding("revisions", "fail", f"{_LATEST} failed: {failure}", fix))
    elif failure == "negotiated":
        findings.append(
            Finding(
                "revisions",
                "warn",
                f"does not speak {_LATEST}, the newest legacy revision",
                "upgrade the server's MCP SDK; clients negotiate down, but lose newer features",
            )
        )
    if not any(v in MODERN_VERSIONS for v in spoken):
        findings.append(
            Finding(
                "revisions",
                "info",
                "does not speak the modern revision 2026-07-28",
                "newer clients fall back to initialize; serving 2026-07-28 lets requests go to "
                "any replica without sticky sessions",
            )
        )
    return findings


async def _nothing_spoken(probe: _Probe) -> Finding:
    """Why no revision could be spoken: most often a token is missing or refused, else not an MCP endpoint."""
    response, _ = await probe.post(_initialize_body())
    if response.status == 401:
        given = any(name.lower() == "authorization" for name in probe.headers)
        return Finding(
            "revisions",
            "fail",
            "the token given was refused (401)"
            if given
            else "the server requires authorization (401): no revision can be checked without a token",
            "check that the token is current and meant for this server" if given else _TOKEN_FIX,
        )
    return Finding(
        "revisions",
        "fail",
        f"no protocol revision could be spoken with this endpoint (initialize answered {response.status})",
        "check the URL (it is usually .../mcp) and that the server is an MCP server",
    )


def _is_sse_endpoint(url: str) -> bool:
    return urlsplit(url).path.rstrip("/").endswith("/sse")


def _sibling_sse_url(url: str) -> str | None:
    """Where the 2024-11-05 HTTP+SSE transport usually lives next to ``.../mcp``: ``.../sse``."""
    parts = urlsplit(url)
    if not parts.path.rstrip("/").endswith("/mcp"):
        return None
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/")[: -len("mcp")] + "sse", parts.query, ""))


async def _host_and_origin(probe: _Probe) -> list[Finding]:
    findings = []
    response, _ = await probe.post(_initialize_body(), Origin=_FOREIGN_ORIGIN)
    if response.status in (400, 403):
        findings.append(Finding("origin", "ok", f"a foreign Origin is refused ({response.status})"))
    else:
        findings.append(
            Finding(
                "origin",
                "fail",
                f"a request with Origin {_FOREIGN_ORIGIN} got {response.status}",
                "validate Origin (the spec requires it): a web page can otherwise drive the server "
                "from a user's browser (DNS rebinding); in trio_mcp list the origins you trust in "
                "HttpTransportOptions",
            )
        )
    response, _ = await probe.post(_initialize_body(), Host="doctor-probe.invalid")
    host = urlsplit(probe.url).hostname or ""
    local = host in ("localhost", "127.0.0.1", "::1")
    if response.status in (400, 403, 404, 421):
        findings.append(Finding("host", "ok", f"a foreign Host header is refused ({response.status})"))
    else:
        findings.append(
            Finding(
                "host",
                "fail" if local else "warn",
                f"a request with Host: doctor-probe.invalid got {response.status}",
                "check the Host header against the names the server is reached by (DNS rebinding "
                "protection; required for servers on localhost); behind a proxy, the proxy may do it",
            )
        )
    return findings


async def _cors(probe: _Probe) -> list[Finding]:
    origin = "https://browser-client.example"
    response, _ = await probe.send(
        "OPTIONS",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, mcp-protocol-version, mcp-session-id, authorization",
        },
    )
    allowed = response.headers.get("access-control-allow-origin")
    if not allowed:
        return [
            Finding(
                "cors",
                "not offered",
                f"no CORS preflight answer for Origin {origin} ({response.status})",
                "only needed for browser-based clients on other origins; to allow them answer OPTIONS with "
                "Access-Control-Allow-Origin/-Methods/-Headers (Content-Type, Mcp-Protocol-Version, "
                "Mcp-Session-Id, Authorization, Last-Event-ID) and expose Mcp-Session-Id",
            )
        ]
    wanted = {"content-type", "mcp-protocol-version", "mcp-session-id"}
    listed = {h.strip().lower() for h in (response.headers.get("access-control-allow-headers") or "").split(",")}
    missing = sorted(wanted - listed) if "*" not in listed else []
    findings = [
        Finding(
            "cors",
            "warn" if missing else "ok",
            f"preflight allows origin {allowed}" + (f" but not headers {', '.join(missing)}" if missing else ""),
            "add them to Access-Control-Allow-Headers" if missing else "",
        )
    ]
    return findings


async def _authorization(probe: _Probe) -> list[Finding]:
    response, _ = await probe.send("POST", headers={"Accept": _ACCEPT}, body=_initialize_body(), keep_auth=False)
    parts = urlsplit(probe.url)
    well_known = urlunsplit(
        (parts.scheme, parts.netloc, "/.well-known/oauth-protected-resource" + parts.path.rstrip("/"), "", "")
    )
    if response.status != 401:
        return [
            Finding(
                "authorization",
                "not offered",
                f"a request without credentials is answered ({response.status}): the server is not protected",
                'to protect it, answer 401 with WWW-Authenticate: Bearer resource_metadata="..." and '
                "serve Protected Resource Metadata (RFC 9728) naming your authorization server",
            )
        ]
    challenge = response.headers.get("www-authenticate") or ""
    findings = []
    metadata_url = well_known
    if "resource_metadata=" in challenge:
        metadata_url = challenge.split("resource_metadata=", 1)[1].split(",")[0].strip().strip('"')
        findings.append(Finding("authorization", "ok", "401 challenge names its resource metadata"))
    else:
        findings.append(
            Finding(
                "authorization",
                "warn",
                f"401 challenge without resource_metadata: {challenge!r}",
                'add resource_metadata="<url>" to WWW-Authenticate so hosts find the metadata '
                "without guessing (they fall back to the well-known URL)",
            )
        )
    try:
        meta_response, body = await probe.send("GET", url=metadata_url, keep_auth=False)
        metadata = json.loads(body) if meta_response.status == 200 else None
    except (ValueError, HttpError, trio.TooSlowError):
        metadata = None
    if not isinstance(metadata, dict) or not metadata.get("authorization_servers"):
        findings.append(
            Finding(
                "authorization",
                "fail",
                f"no usable Protected Resource Metadata at {metadata_url}",
                "serve a JSON document with 'resource' (this URL) and 'authorization_servers' there",
            )
        )
    else:
        resource = metadata.get("resource")
        ok = resource in (probe.url, probe.url.rstrip("/"))
        findings.append(
            Finding(
                "authorization",
                "ok" if ok else "warn",
                f"Protected Resource Metadata lists {metadata['authorization_servers']}, resource {resource!r}",
                "" if ok else "'resource' must be this endpoint's URL, or clients refuse the tokens",
            )
        )
    return findings


async def _sessions(probe: _Probe) -> list[Finding]:
    response, body = await probe.post(_initialize_body())
    if response.status == 401:
        return [Finding("sessions", "info", "initialize answered 401: no session to check", _TOKEN_FIX)]
    if response.status != 200:
        return [Finding("sessions", "info", f"initialize answered {response.status}: no session to check")]
    session = response.headers.get("mcp-session-id")
    if not session:
        return [await _sessionless(probe)]
    findings = [Finding("sessions", "ok", "initialize returned an Mcp-Session-Id")]
    common = {"Mcp-Session-Id": session, "Mcp-Protocol-Version": _LATEST}
    try:
        await probe.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), **common)
        ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
        unknown, _ = await probe.post(ping, **{**common, "Mcp-Session-Id": "doctor-" + secrets.token_hex(8)})
        if unknown.status == 404:
            findings.append(Finding("session expiry", "ok", "an unknown session gets 404, so clients re-initialize"))
        else:
            findings.append(
                Finding(
                    "session expiry",
                    "fail",
                    f"an unknown session gets {unknown.status}, not 404",
                    "answer 404 for unknown or expired sessions: that is the only signal clients "
                    "use to start a new session; anything else strands them",
                )
            )
        findings.extend(await _stream(probe, common))
    finally:
        with trio.move_on_after(probe.timeout):
            await probe.send("DELETE", headers=common)
    return findings


async def _sessionless(probe: _Probe) -> Finding:
    """Initialize gave no session: fine if the next request is answered without one, else a proxy ate the header."""
    common = {"Mcp-Protocol-Version": _LATEST}
    await probe.post(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(), **common)
    response, _ = await probe.post(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode(), **common)
    if response.status == 200:
        return Finding("sessions", "ok", "a sessionless server: initialize gives no Mcp-Session-Id, requests work")
    return Finding(
        "sessions",
        "fail",
        f"initialize succeeded without an Mcp-Session-Id header, and the next request got {response.status}: "
        "every session request fails (a proxy strips the header)",
        _SESSION_HEADER_FIX,
    )


async def _stream(probe: _Probe, common: dict[str, str]) -> list[Finding]:
    try:
        response, _ = await probe.send("GET", headers={"Accept": "text/event-stream", **common}, read=False)
    except trio.TooSlowError:
        return [
            Finding(
                "event stream",
                "fail",
                f"the GET event stream sent no response within {probe.timeout:g} s while ordinary requests are "
                "answered: a proxy in front buffers the event stream",
                _BUFFERING_FIX,
            )
        ]
    async with response:
        if response.status == 405:
            return [
                Finding(
                    "resumption",
                    "not offered",
                    "no standalone GET stream (405)",
                    "only needed for server-initiated messages outside a request",
                )
            ]
        if response.status != 200:
            return [Finding("resumption", "warn", f"GET stream answered {response.status}")]
        findings = _stream_headers(response)
        first = b""
        with trio.move_on_after(min(probe.timeout, 2.0)):
            while b"\n\n" not in first:
                chunk = await response.receive_some()
                if not chunk:
                    break
                first += chunk
    event_ids = [line[3:].strip() for line in first.decode("utf-8", "replace").splitlines() if line.startswith("id:")]
    if not event_ids:
        findings.append(
            Finding(
                "resumption",
                "warn",
                "the GET stream's first event carries no id",
                "send a priming event with an id (an event store) so a client whose stream drops "
                "can resume with Last-Event-ID instead of losing messages",
            )
        )
        return findings
    resumed, _ = await probe.send(
        "GET", headers={"Accept": "text/event-stream", "Last-Event-ID": event_ids[0], **common}, read=False
    )
    await resumed.aclose()
    if resumed.status == 200:
        findings.append(Finding("resumption", "ok", "streams carry event ids and Last-Event-ID is accepted"))
    else:
        findings.append(
            Finding(
                "resumption",
                "fail",
                f"resuming with Last-Event-ID got {resumed.status}",
                "keep events in an event store long enough for clients to reconnect",
            )
        )
    return findings


def _stream_headers(response: ClientResponse) -> list[Finding]:
    findings = []
    kind = response.headers.get("content-type") or ""
    if not kind.startswith("text/event-stream"):
        findings.append(
            Finding(
                "proxy headers",
                "fail",
                f"the GET stream has Content-Type {kind!r}",
                "a proxy rewrote the stream's Content-Type; serve it as text/event-stream",
            )
        )
    if response.headers.get("content-encoding"):
        findings.append(
            Finding(
                "proxy headers",
                "warn",
                f"the event stream is compressed ({response.headers.get('content-encoding')})",
                "compression buffers events: exclude text/event-stream from gzip in the proxy",
            )
        )
    if "no-cache" not in (response.headers.get("cache-control") or ""):
        findings.append(
            Finding(
                "proxy headers",
                "warn",
                "the event stream lacks Cache-Control: no-cache",
                "a proxy stripped it or the server never sent it; caches may hold events back",
            )
        )
    if (response.headers.get("x-accel-buffering") or "").lower() != "no":
        findings.append(
            Finding(
                "proxy headers",
                "info",
                "no X-Accel-Buffering: no on the event stream",
                "behind nginx, turn proxy_buffering off for the MCP location, or events arrive late",
            )
        )
    if not findings:
        findings.append(Finding("proxy headers", "ok", "the event stream keeps its streaming headers"))
    return findings


_MARKS: Final = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "not offered": "n/a ", "info": "info"}


async def doctor_command(args: argparse.Namespace) -> int:
    """Run every check against ``args.url`` and print the findings; exit 1 if any failed, 3 if unreachable."""
    if not args.url.startswith(("http://", "https://")):
        raise CliError("doctor checks HTTP endpoints: give an http:// or https:// URL")
    timeouts = HttpTimeouts(connect=args.timeout, read_idle=args.timeout, write=args.timeout)
    async with HttpClient(timeouts=timeouts) as http:
        probe = _Probe(http, args.url, parse_headers(args.header), args.timeout)
        try:
            await probe.post(_initialize_body())
        except (HttpError, OSError, trio.TooSlowError) as exc:
            raise CliError(f"cannot reach {args.url}: {exc or type(exc).__name__}", CONNECTION) from None
        findings: list[Finding] = []
        for check in (_revisions, _host_and_origin, _cors, _authorization, _sessions):
            try:
                findings.extend(await check(probe))
            except (HttpError, OSError, trio.TooSlowError, ValueError) as exc:
                what = f"no answer within {args.timeout:g} s" if isinstance(exc, trio.TooSlowError) else repr(exc)
                findings.append(
                    Finding(
                        check.__name__.strip("_"),
                        "fail",
                        f"the probe failed: {what}",
                        "the endpoint broke off an ordinary request; check the server's logs",
                    )
                )
    if args.json:
        print(json.dumps([attrs.asdict(finding) for finding in findings], indent=2))
    else:
        for finding in findings:
            print(f"[{_MARKS[finding.status]}] {finding.check}: {finding.detail}")
            if finding.fix and finding.status != "ok":
                print(f"       fix: {finding.fix}")
        sys.stdout.flush()
    return TOOL_ERROR if any(finding.status == "fail" for finding in findings) else OK
