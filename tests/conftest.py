"""Suite-wide rules.

A test that needs a real peer (Redis, a load balancer, an authorization server, a browser, the interop set-up)
may skip with a visible reason on a machine where the peer cannot be installed. CI sets
``TRIO_MCP_STRICT_SKIPS=1``: there every skip is a failure, so nothing CI is meant to run is quietly left out.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

#: pytester tests the pytest plugin; the plugin's fixtures serve our own tests too (installed, it loads by itself).
pytest_plugins = ["pytester", "trio_mcp.pytest_plugin", "scale_peers"]  # scale_peers: the redis_server fixture

STRICT_SKIPS = os.environ.get("TRIO_MCP_STRICT_SKIPS") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if STRICT_SKIPS and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under TRIO_MCP_STRICT_SKIPS=1 (CI runs every test): {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    report = outcome.get_result()
    if STRICT_SKIPS and report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"module skipped under TRIO_MCP_STRICT_SKIPS=1 (CI runs every test): {reason}"


@pytest.fixture(params=["pipes", "portable"])
def stdio_server_io(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test twice: the stdio servers it starts (they inherit our environment) on trio's pipes, then on the
    portable path, worker threads as on Windows (``TRIO_MCP_STDIO_PORTABLE=1``)."""
    from trio_mcp.transports.stdio import PORTABLE_ENV

    if request.param == "portable":
        monkeypatch.setenv(PORTABLE_ENV, "1")
    else:
        monkeypatch.delenv(PORTABLE_ENV, raising=False)
    return str(request.param)


@pytest.fixture
def self_signed_cert(tmp_path: Any) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and localhost and its key (PEM files), made with the openssl CLI."""
    import shutil
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("the openssl CLI is needed to make a self-signed certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    made = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], capture_output=True, timeout=30)  # fmt: skip
    if made.returncode != 0:
        pytest.skip("openssl could not make a self-signed certificate")
    return str(cert), str(key)
