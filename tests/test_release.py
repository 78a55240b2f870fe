"""The package as it would be published: ``python -m build`` makes an sdist and a wheel (built from that sdist)
that ``twine check`` accepts, and the wheel, installed into a clean virtual environment, runs the demo and the
command line with no checkout on the path. docs/releasing.md describes the release this rehearses."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from paths import ROOT

import trio_mcp


def _run(*argv: str | Path, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, argv))} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def test_the_wheel_installs_into_a_clean_environment_and_runs_the_demo(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "build", "--outdir", dist, ROOT, cwd=tmp_path)
    (wheel,) = dist.glob("trio_mcp-*.whl")
    (sdist,) = dist.glob("trio_mcp-*.tar.gz")
    assert f"-{trio_mcp.__version__}" in wheel.name and f"-{trio_mcp.__version__}." in sdist.name
    names = zipfile.ZipFile(wheel).namelist()
    assert "trio_mcp/py.typed" in names and "trio_mcp/examples/bookshop.py" in names
    assert "trio_mcp/cli/inspector-npm/package-lock.json" in names  # the Inspector release `trio-mcp dev` installs
    assert not [name for name in names if name.startswith("tests/")]
    _run(sys.executable, "-m", "twine", "check", "--strict", wheel, sdist, cwd=tmp_path)

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)
    where = _run(venv / "bin" / "python", "-c", "import trio_mcp; print(trio_mcp.__file__)", cwd=tmp_path)
    assert where.stdout.startswith(str(venv))  # the installed wheel, not this checkout
    version = _run(venv / "bin" / "trio-mcp", "--version", cwd=tmp_path)
    assert version.stdout.strip() == f"trio-mcp {trio_mcp.__version__}"
    demo = _run(venv / "bin" / "python", "-m", "trio_mcp.examples.demo", "--round-trips", "10", cwd=tmp_path)
    assert "search_books -> " in demo.stdout and "returned control at once" in demo.stdout


def test_the_changelog_has_a_section_for_this_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[?([^\]\s]+)\]?", changelog, re.MULTILINE)
    assert headings[0] == "Unreleased"
    assert trio_mcp.__version__ in headings
