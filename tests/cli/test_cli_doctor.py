"""``trio-mcp doctor`` against real trio_mcp HTTP servers: what it finds, and that it says how to fix it."""

from __future__ import annotations

from typing import Any

import trio
from cli_helpers import run_cli, run_doctor, serve_doctor_patient

from trio_mcp import HttpTransportOptions


async def _doctor(
    nursery: trio.Nursery, options: HttpTransportOptions | None = None, *words: str
) -> tuple[int, list[dict[str, Any]]]:
    port = await serve_doctor_patient(nursery, options)
    try:
        return await run_doctor(f"http://127.0.0.1:{port}/mcp", *words)
    finally:
        nursery.cancel_scope.cancel()


def _by_check(findings: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for finding in findings:
        grouped.setdefault(finding["check"], []).append(finding)
    return grouped


async def test_doctor_on_a_default_server() -> None:
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            status, findings = await _doctor(nursery)
    checks = _by_check(findings)
    assert status == 0
    assert checks["revisions"][0]["status"] == "ok" and "2025-11-25" in checks["revisions"][0]["detail"]
    assert "2026-07-28" in checks["revisions"][0]["detail"]
    assert "2024-11-05 (HTTP+SSE at http://127.0.0.1:" in checks["revisions"][0]["detail"]
    assert checks["origin"][0]["status"] == "ok" and checks["host"][0]["status"] == "ok"
    assert checks["cors"][0]["status"] == "not offered" and checks["cors"][0]["fix"]
    assert checks["authorization"][0]["status"] == "not offered"
    assert checks["session expiry"][0]["status"] == "ok"
    assert checks["proxy headers"][0]["status"] == "ok"
    assert checks["resumption"][0]["status"] in ("ok", "warn")


async def test_doctor_flags_a_protected_server_without_resource_metadata() -> None:
    async def authenticate(token: str) -> str | None:
        return "someone" if token == "sesame" else None

    options = HttpTransportOptions(authenticate=authenticate)
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            status, findings = await _doctor(nursery, options, "--header", "Authorization: Bearer sesame")
    checks = _by_check(findings)
    assert status == 1
    assert checks["revisions"][0]["status"] == "ok"  # the probes that need it carry the given credentials
    auth = [(f["status"], f["detail"]) for f in checks["authorization"]]
    assert auth[0][0] == "warn" and "without resource_metadata" in auth[0][1]
    assert auth[1][0] == "fail" and "Protected Resource Metadata" in auth[1][1]


async def test_doctor_on_nothing_listening_exits_3() -> None:
    out = await run_cli("doctor", "http://127.0.0.1:1/mcp", "--timeout", "2")
    assert out.status == 3 and "cannot reach" in out.stderr
    out = await run_cli("doctor", "ws://127.0.0.1:1/")
    assert out.status == 2
