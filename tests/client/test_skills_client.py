"""Reading skills (SEP-2640) as a host does, over real transports and both eras: entries listed and fetched,
files read only when asked and verified against the entry (size, digest, frontmatter), and a mismatch a typed
error whose content is never returned."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import trio
from transport_helpers import connect

import trio_mcp
from trio_mcp import CapabilityError, Context, McpError, SkillVerificationError
from trio_mcp.testing import open_in_memory

SKILLS = "io.modelcontextprotocol/skills"
SKILL_MD = "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nUse FORMS.\n"
FORMS = "Forms.\n"


def entry(skill_md: str, forms: str, **frontmatter: Any) -> dict[str, Any]:
    def item(path: str, text: str) -> dict[str, Any]:
        data = text.encode()
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        return {"uri": f"skill://pdf-processing/{path}", "digest": digest, "size": len(data)}

    return {
        "uri": "skill://pdf-processing/SKILL.md",
        "frontmatter": {"name": "pdf-processing", "description": "Extract, fill, and assemble PDF documents"}
        | frontmatter,
        "resources": [item("SKILL.md", skill_md), item("references/FORMS.md", forms)],
    }


def lying_server(served_skill_md: str, listed: dict[str, Any], reads: list[str]) -> trio_mcp.Server:
    """A server whose skills/list entry says one thing and whose files say another (what a tampering gateway
    or a stale listing looks like to a host)."""
    server = trio_mcp.Server("lying")
    server.extension(SKILLS, {})

    @server.request_handler("skills/list")
    async def list_skills(params: dict[str, Any] | None, ctx: Context) -> dict[str, Any]:
        return {"skills": [listed]}

    @server.resource("skill://pdf-processing/SKILL.md", mime_type="text/markdown")
    async def skill_md(ctx: Context) -> str:
        reads.append("SKILL.md")
        return served_skill_md

    @server.resource("skill://pdf-processing/references/FORMS.md", mime_type="text/markdown")
    async def forms(ctx: Context) -> str:
        reads.append("FORMS.md")
        return FORMS

    return server


@pytest.mark.parametrize("transport", ["memory", "http-session", "http-stateless"])
async def test_a_host_lists_gets_and_reads_verified_files(transport: str) -> None:
    server = trio_mcp.Server("skills", page_size=1)
    uri = server.add_skill(SKILL_MD, {"references/FORMS.md": FORMS, "logo.bin": b"\x00\xff"})
    server.add_skill("---\nname: notes\ndescription: Take notes\n---\n", prefix="team")
    with trio.fail_after(20):
        async with connect(server, transport) as client:
            skills = await client.list_skills()
            assert [skill.uri for skill in skills] == [uri, "skill://team/notes/SKILL.md"]
            skill = skills[0]
            assert (skill.name, skill.description) == ("pdf-processing", "Extract, fill, and assemble PDF documents")
            assert await client.get_skill(uri) == skill
            assert (await client.read_skill_file(skill)).decode() == SKILL_MD
            assert (await client.read_skill_file(skill, "references/FORMS.md")).decode() == FORMS
            assert await client.read_skill_file(skill, "skill://pdf-processing/logo.bin") == b"\x00\xff"
            with pytest.raises(SkillVerificationError, match="does not list this file"):
                await client.read_skill_file(skill, "references/OTHER.md")
            with pytest.raises(McpError) as unknown:
                await client.get_skill("skill://nothing/SKILL.md")
            assert unknown.value.code == -32602


@pytest.mark.parametrize(
    ("served", "listed", "reason"),
    [
        (SKILL_MD.replace("Use FORMS.", "Use EVILS."), entry(SKILL_MD, FORMS), "digest"),
        (SKILL_MD + "extra bytes\n", entry(SKILL_MD, FORMS), "bytes read, the entry says"),
        (
            SKILL_MD.replace("Extract, fill, and assemble PDF documents", "Exfiltrate credentials"),
            entry(SKILL_MD.replace("Extract, fill, and assemble PDF documents", "Exfiltrate credentials"), FORMS),
            "frontmatter differs from the entry's in description",
        ),
    ],
    ids=["digest", "size", "frontmatter"],
)
async def test_a_file_that_is_not_what_the_entry_says_is_refused(
    served: str, listed: dict[str, Any], reason: str
) -> None:
    reads: list[str] = []
    async with open_in_memory(lying_server(served, listed, reads)) as client:
        (skill,) = await client.list_skills()
        assert reads == []  # listing reads nothing
        with pytest.raises(SkillVerificationError, match=reason) as refused:
            await client.read_skill_file(skill)
        assert refused.value.uri == "skill://pdf-processing/SKILL.md"
        assert reads == ["SKILL.md"]  # and reading SKILL.md reads nothing else


async def test_entries_that_break_the_rules_are_left_out_and_servers_without_skills_refused() -> None:
    broken = entry(SKILL_MD, FORMS)
    broken["frontmatter"] = {"name": "other-name", "description": "d"}
    async with open_in_memory(lying_server(SKILL_MD, broken, [])) as client:
        assert await client.list_skills() == []
    async with open_in_memory(trio_mcp.Server("plain")) as client:
        with pytest.raises(CapabilityError, match="io.modelcontextprotocol/skills"):
            await client.list_skills()
