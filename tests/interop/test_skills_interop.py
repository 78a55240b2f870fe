"""Skills (SEP-2640) with peers nobody here wrote, both ways, over stdio: the TypeScript SDK v2 (2.4.0, its
``ext/skills``) and FastMCP (4.2.3). Their servers are read by trio_mcp's client, which verifies every file; trio_mcp's
server is read by their hosts, which verify every file too. A server that lies about a file is refused by them all.

The peers come from ``bash tests/interop/skills_setup.sh`` (after ``tests/interop/setup.sh``), which pins them and
writes ``.interop/skills-paths.json``; without that file this module is skipped (and CI, which runs the set-up,
fails on a skip)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

import trio_mcp
from trio_mcp import SkillVerificationError

pytestmark = pytest.mark.interop

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PATHS_FILE = REPO / ".interop" / "skills-paths.json"
FIXTURE = REPO / "tests" / "conformance" / "skills" / "pdf-processing"


def _load_paths() -> dict[str, str]:
    if not PATHS_FILE.exists():
        pytest.skip(f"{PATHS_FILE} is missing: run `bash tests/interop/skills_setup.sh`", allow_module_level=True)
    paths: dict[str, str] = json.loads(PATHS_FILE.read_text())
    return paths


PATHS = _load_paths()
NODE = PATHS["node"]
TS = Path(PATHS["ts_skills"])
FASTMCP = PATHS["fastmcp_python"]

SERVER = """
import sys, trio, trio_mcp
server = trio_mcp.Server("trio-skills")
server.add_skill_folder(sys.argv[1])
if len(sys.argv) > 2:  # serve other bytes than the entry describes, as a tampering gateway would
    forms = "skill://pdf-processing/references/FORMS.md"
    server.remove_resource(forms)
    async def tampered() -> str:
        return "Forms, rewritten on the way.\\n"
    server.add_resource(tampered, forms)
trio.run(server.serve_stdio)
"""


@pytest.fixture
def skills_root(tmp_path: Path) -> Path:
    """A folder of skill folders holding the conformance fixture's skill (SKILL.md and references/FORMS.md)."""
    shutil.copytree(FIXTURE, tmp_path / "skills" / "pdf-processing")
    return tmp_path / "skills"


@pytest.fixture
def our_server(tmp_path: Path, skills_root: Path) -> list[str]:
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    return [sys.executable, str(script), str(skills_root / "pdf-processing")]


def expected_files() -> dict[str, str]:
    return {
        "SKILL.md": (FIXTURE / "SKILL.md").read_text(encoding="utf-8"),
        "references/FORMS.md": (FIXTURE / "references" / "FORMS.md").read_text(encoding="utf-8"),
    }


async def run_peer(command: list[str]) -> list[dict[str, Any]]:
    with trio.fail_after(60):
        done = await trio.run_process(command, capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]


async def read_all(server: list[str]) -> tuple[str, dict[str, str]]:
    """trio_mcp's client as a host: list, then read every file of the one skill, verified."""
    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(server, stderr="capture") as client:
            (skill,) = await client.list_skills()
            assert skill.frontmatter == {
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0",
                "metadata": {"version": "1.0"},
            }
            assert await client.get_skill(skill.uri) == skill
            assert skill.resources != "dynamic"
            root = skill.uri[: -len("SKILL.md")]
            files = {
                item.uri[len(root) :]: (await client.read_skill_file(skill, item.uri)).decode()
                for item in skill.resources
            }
            return client.era, files


async def test_our_client_reads_the_typescript_sdks_skills(skills_root: Path) -> None:
    era, files = await read_all([NODE, str(TS / "skills_server.mjs"), str(skills_root)])
    assert files == expected_files()


async def test_our_client_reads_fastmcps_skills(skills_root: Path) -> None:
    era, files = await read_all([FASTMCP, str(HERE / "fastmcp_skills_server.py"), str(skills_root)])
    assert era == "modern"  # FastMCP speaks 2026-07-28; the TypeScript server above, the legacy era
    assert files == expected_files()


async def test_the_typescript_sdk_reads_our_skills(our_server: list[str]) -> None:
    (entry,) = await run_peer([NODE, str(TS / "skills_client.mjs"), *our_server])
    assert entry["uri"] == "skill://pdf-processing/SKILL.md" and "refused" not in entry
    root = "skill://pdf-processing/"
    assert {uri[len(root) :]: text for uri, text in entry["files"].items()} == expected_files()
    assert entry["directory"] == [root + "references", root + "SKILL.md"]  # resources/directory/read


async def test_fastmcp_reads_our_skills(our_server: list[str]) -> None:
    (entry,) = await run_peer([FASTMCP, str(HERE / "fastmcp_skills_client.py"), *our_server])
    assert entry == {"uri": "skill://pdf-processing/SKILL.md", "files": expected_files()}


async def test_every_host_refuses_a_file_that_is_not_what_the_entry_says(our_server: list[str]) -> None:
    lying = [*our_server, "tamper"]
    (ts,) = await run_peer([NODE, str(TS / "skills_client.mjs"), *lying])
    assert ts["refused"].endswith("skill://pdf-processing/references/FORMS.md")
    (fastmcp,) = await run_peer([FASTMCP, str(HERE / "fastmcp_skills_client.py"), *lying])
    assert "references/FORMS.md" in fastmcp["refused"]
    with trio.fail_after(60):
        async with trio_mcp.open_stdio_client(lying, stderr="capture") as client:
            (skill,) = await client.list_skills()
            with pytest.raises(SkillVerificationError):
                await client.read_skill_file(skill, "references/FORMS.md")
