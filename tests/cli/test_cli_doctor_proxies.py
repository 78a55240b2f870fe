"""``trio-mcp doctor`` behind real nginx configurations that break MCP, on a protected server without a token, and
on an HTTP+SSE endpoint: each finding says what is wrong and how to fix it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import trio
from cli_helpers import CLI, cli_env, run_doctor, serve_doctor_patient
from scale_peers import nginx

from trio_mcp import HttpTransportOptions


async def _doctor(url: str, *words: str) -> tuple[int, list[dict[str, Any]]]:
    return await run_doctor(url, *words, probe_timeout=3, timeout=120)


async def _behind_nginx(tmp_path: Path, directives: str) -> tuple[int, list[dict[str, Any]]]:
    with trio.fail_after(150):
        async with trio.open_nursery() as nursery:
            backend = await serve_doctor_patient(nursery)
            async with nginx(backend, tmp_path, directives) as port:
                result = await _doctor(f"http://127.0.0.1:{port}/mcp")
            nursery.cancel_scope.cancel()
    return result


def _said(findings: list[dict[str, Any]]) -> str:
    return "\n".join(f"{f['status']} {f['check']}: {f['detail']} fix: {f['fix']}" for f in findings)


async def test_behind_a_proxy_that_passes_mcp_through(tmp_path: Path) -> None:
    status, findings = await _behind_nginx(tmp_path, "proxy_buffering off;")
    assert status == 0, _said(findings)
    assert "2025-11-25" in findings[0]["detail"] and findings[0]["status"] == "ok"
    assert not [f for f in findings if f["status"] == "fail"]


async def test_behind_a_proxy_that_strips_the_session_header(tmp_path: Path) -> None:
    status, findings = await _behind_nginx(tmp_path, "proxy_buffering off; proxy_hide_header Mcp-Session-Id;")
    said = _said(findings)
    assert status == 1, said
    assert "2025-11-25" not in findings[0]["detail"]  # initialize works, the session behind it does not
    assert "fail sessions: initialize succeeded without an Mcp-Session-Id header, and the next request got 400" in said
    assert "every session request fails (a proxy strips the header)" in said
    assert "proxy_hide_header Mcp-Session-Id" in said


async def test_behind_a_proxy_that_buffers_the_event_stream(tmp_path: Path) -> None:
    status, findings = await _behind_nginx(tmp_path, "proxy_buffering on; proxy_ignore_headers X-Accel-Buffering;")
    said = _said(findings)
    assert status == 1, said
    assert "fail event stream: the GET event stream sent no response within 3 s" in said
    assert "a proxy in front buffers the event stream" in said
    assert "`proxy_buffering off;`" in said and "HAProxy" in said
    assert "upgrade the server's MCP SDK" not in said and "TooSlowError" not in said
    assert "check the server's logs" not in said


async def test_a_protected_server_without_a_token() -> None:
    async def authenticate(token: str) -> str | None:
        return "someone" if token == "sesame" else None

    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            port = await serve_doctor_patient(nursery, HttpTransportOptions(authenticate=authenticate))
            status, findings = await _doctor(f"http://127.0.0.1:{port}/mcp")
            _, refused = await _doctor(f"http://127.0.0.1:{port}/mcp", "-H", "Authorization: Bearer stale")
            nursery.cancel_scope.cancel()
    said = _said(findings)
    assert status == 1
    assert "fail revisions: the server requires authorization (401)" in said
    assert "-H 'Authorization: Bearer TOKEN'" in said
    assert "is an MCP server" not in said
    assert "the token given was refused (401)" in _said(refused)


async def test_on_the_http_sse_endpoint_it_points_at_streamable_http() -> None:
    with trio.fail_after(120):
        async with trio.open_nursery() as nursery:
            port = await serve_doctor_patient(nursery)
            status, findings = await _doctor(f"http://127.0.0.1:{port}/sse")
            nursery.cancel_scope.cancel()
    said = _said(findings)
    assert status == 0, said
    assert "speaks 2024-11-05" in said
    assert "this is the HTTP+SSE endpoint of the 2024-11-05 revision" in said
    assert f"trio-mcp doctor http://127.0.0.1:{port}/mcp" in said
    assert "upgrade" not in said


async def test_doctor_json_into_a_closed_pipe_is_quiet() -> None:
    reader, writer = os.pipe()
    os.close(reader)
    try:
        with trio.fail_after(120):
            async with trio.open_nursery() as nursery:
                port = await serve_doctor_patient(nursery)
                done = await trio.run_process(
                    [*CLI, "doctor", f"http://127.0.0.1:{port}/mcp", "--json", "--timeout", "3"],
                    stdout=writer,
                    capture_stderr=True,
                    check=False,
                    env=cli_env(),
                )
                nursery.cancel_scope.cancel()
    finally:
        os.close(writer)
    assert done.stderr == b"" and done.returncode == 141
