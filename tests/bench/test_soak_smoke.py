"""Smoke test of benchmarks/soak.py, so the soak cannot rot: a few seconds of its load, and its verdict."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from paths import ROOT

pytestmark = pytest.mark.bench

SOAK = ROOT / "benchmarks" / "soak.py"


def test_a_short_soak_serves_every_call_and_comes_back_flat() -> None:
    run = subprocess.run(
        [
            sys.executable,
            str(SOAK),
            "--seconds",
            "4",
            "--settle",
            "1",
            "--http-workers",
            "2",
            "--stateless-workers",
            "2",
            "--stdio-workers",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "errors 0" in run.stdout and "FLAT: every figure came back after the load" in run.stdout
    for process in ("http server", "stdio server", "driver"):
        assert f"| {process}" in run.stdout
