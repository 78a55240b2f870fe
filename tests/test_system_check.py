"""``make test`` on a machine that lacks system programs, run without root: one line per missing part saying how to
install it, and a stop before anything else runs (tests/system_check.sh, the first step of ``make test``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from paths import ROOT

SCRIPT = ROOT / "tests" / "system_check.sh"


def _check(path: str) -> subprocess.CompletedProcess[str]:
    """The check as an ordinary user (nobody, when the tests run as root), with PATH limited to ``path``."""
    user = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    return subprocess.run(
        [*user, "/bin/bash", "-s"],
        stdin=SCRIPT.open(),
        env={"PATH": path},
        capture_output=True,
        text=True,
        timeout=30,
        cwd="/",
    )


@pytest.mark.skipif(sys.platform != "linux", reason="make test runs on Debian")
def test_each_missing_program_is_one_line_saying_how_to_install_it() -> None:
    done = _check("/nonexistent")  # no chromium, no redis-server (haproxy and nginx may be in /usr/sbin)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert (
        "make test: chromium is missing (for the browser tests, tests/interop/test_browser.py): install it with 'sudo apt-get install chromium' (Debian), or run make test as root"
        in lines
    )
    assert any(line.startswith("make test: redis-server is missing (for the Redis tests") for line in lines)
    assert all(line.startswith("make test: ") for line in lines), done.stderr


def test_make_test_runs_the_check_first() -> None:
    makefile = (ROOT / "Makefile").read_text()
    test_line = next(line for line in makefile.splitlines() if line.startswith("test:"))
    assert test_line.split()[1] == "system-check"
