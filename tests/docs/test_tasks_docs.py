"""The example of docs/tasks.md runs as printed, in both wire forms (a subprocess, as a reader would run it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

DOC = ROOT / "docs" / "tasks.md"


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
def test_docs_example_reports_progress_asks_and_is_cancelled(version: str, tmp_path: Path) -> None:
    example = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[0]
    script = tmp_path / "report.py"
    script.write_text(example.replace('protocol_version="2026-07-28"', f'protocol_version="{version}"'))
    env = {**os.environ, "PYTHONPATH": str(DOC.parent.parent)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "server asks: Half-way there. Add an appendix?" in lines
    assert "result: report of 6 pages with an appendix" in lines
    assert lines[-1] == "second report cancelled"
