"""``trio-mcp skills``: list a server's skills and read a skill's files, verified, from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from cli_helpers import run_cli

SERVER = """
import trio_mcp

server = trio_mcp.Server("skills")
server.add_skill(
    "---\\nname: pdf-processing\\ndescription: Extract, fill, and assemble PDF documents\\n---\\n\\nRead FORMS.\\n",
    {"references/FORMS.md": "Forms.\\n"},
)

async def tampered() -> str:
    return "Not the forms the entry describes.\\n"

server.remove_resource("skill://pdf-processing/references/FORMS.md")
server.add_resource(tampered, "skill://pdf-processing/references/FORMS.md")

if __name__ == "__main__":
    import trio
    trio.run(server.serve_stdio)
"""


async def test_list_and_read_skills(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER, encoding="utf-8")
    command = ["--", sys.executable, str(script)]

    listed = await run_cli("skills", "list", *command)
    assert listed.status == 0, listed.stderr
    assert listed.stdout == (
        "skill://pdf-processing/SKILL.md  (2 files)  — Extract, fill, and assemble PDF documents\n"
    )
    entries = json.loads((await run_cli("skills", "list", "--json", *command)).stdout)
    assert [entry["uri"] for entry in entries] == ["skill://pdf-processing/SKILL.md"]

    read = await run_cli("skills", "read", "skill://pdf-processing/SKILL.md", *command)
    assert read.status == 0, read.stderr
    assert read.stdout.endswith("---\n\nRead FORMS.\n")

    # The server now serves other bytes than its entry describes: refused, nothing printed.
    refused = await run_cli("skills", "read", "skill://pdf-processing/SKILL.md", "references/FORMS.md", *command)
    assert (refused.status, refused.stdout) == (1, "")
    assert "digest" in refused.stderr or "bytes read" in refused.stderr

    missing = await run_cli("skills", "read", *command)
    assert missing.status == 2 and "needs the URI" in missing.stderr
