"""Serving skills (SEP-2640) over real transports: folder and code skills, the extension declared in both eras,
skills/list and skills/get, each file a ``skill://`` resource with its digest and size, directory reads, paths
that leave the folder refused, files read lazily, and a watched folder announcing its changes."""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
import trio
from transport_helpers import connect

import trio_mcp
from trio_mcp import McpError
from trio_mcp.proxy import open_proxy
from trio_mcp.testing import open_in_memory
from trio_mcp.types import META_DEADLINE

SKILLS = "io.modelcontextprotocol/skills"
SKILL_MD = """---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
license: Apache-2.0
metadata:
  version: "2.1"
  reviewed: yes
---

# PDF processing

Pick a form from `references/`.
"""


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def make_skill_folder(base: Path) -> Path:
    root = base / "pdf-processing"
    (root / "references" / "regional").mkdir(parents=True)
    (root / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    (root / "references" / "FORMS.md").write_text("Forms.\n", encoding="utf-8")
    (root / "references" / "regional" / "eu.md").write_text("EU.\n", encoding="utf-8")
    (root / "logo.bin").write_bytes(b"\x89PNG\xff\x00")
    secret = base / "secret.txt"
    secret.write_text("outside the skill\n", encoding="utf-8")
    os.symlink(secret, root / "leak.txt")  # points out of the folder: never served
    return root


async def list_all(client: trio_mcp.Client) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await client.request("skills/list", {"cursor": cursor} if cursor else {})
        entries += page["skills"]
        cursor = page.get("nextCursor")
        if not cursor:
            return entries


@pytest.mark.parametrize("transport", ["memory", "http-session", "http-stateless"])
async def test_a_skill_folder_is_listed_read_and_browsed(tmp_path: Path, transport: str) -> None:
    root = make_skill_folder(tmp_path)
    server = trio_mcp.Server("skills", page_size=1)
    uri = server.add_skill_folder(root)
    assert uri == "skill://pdf-processing/SKILL.md"
    server.add_skill("---\nname: notes\ndescription: Take notes\n---\nWrite it down.\n", prefix="acme/team")
    with trio.fail_after(20):
        async with connect(server, transport) as client:
            # Declared on both eras: in initialize (as SEP-2640 says) and in server/discover.
            deadlines = {META_DEADLINE: {"marginMs": 2.0}} if client.era == "modern" else {}  # trio_mcp's own
            assert client.server_capabilities.extensions == {SKILLS: {"directoryRead": True}, **deadlines}
            assert client.server_capabilities.resources is not None

            entries = await list_all(client)  # one skill per page
            assert [entry["uri"] for entry in entries] == [uri, "skill://acme/team/notes/SKILL.md"]
            entry = entries[0]
            assert entry["frontmatter"] == {
                "name": "pdf-processing",
                "description": "Extract, fill, and assemble PDF documents",
                "license": "Apache-2.0",
                "metadata": {"version": "2.1", "reviewed": "yes"},  # YAML 1.2: `yes` is a string
            }
            files = {item["uri"]: item for item in entry["resources"]}
            expected = {
                "SKILL.md": SKILL_MD.encode(),
                "logo.bin": b"\x89PNG\xff\x00",
                "references/FORMS.md": b"Forms.\n",
                "references/regional/eu.md": b"EU.\n",
            }
            assert sorted(files) == sorted(f"skill://pdf-processing/{path}" for path in expected)
            for path, data in expected.items():
                assert files[f"skill://pdf-processing/{path}"] | {} == {
                    "uri": f"skill://pdf-processing/{path}",
                    "digest": digest(data),
                    "size": len(data),
                }

            got = await client.request("skills/get", {"uri": uri})
            assert got["skill"] == entry and "nextCursor" not in got
            if client.era == "modern":
                assert "ttlMs" in got and "cacheScope" in got
                page = await client.request("skills/list", {})
                assert "ttlMs" in page and "cacheScope" in page
            with pytest.raises(McpError) as unknown:
                await client.request("skills/get", {"uri": "skill://nothing/SKILL.md"})
            assert unknown.value.code == -32602

            listed = {item.uri: item for item in (await client.list_resources()).resources}
            skill_md = listed[uri]
            assert (skill_md.name, skill_md.mime_type) == ("pdf-processing", "text/markdown")
            assert skill_md.description == "Extract, fill, and assemble PDF documents"
            assert "skill://pdf-processing/leak.txt" not in listed
            text = (await client.read_resource(uri)).contents[0]
            assert text.text == SKILL_MD  # type: ignore[union-attr]
            blob = (await client.read_resource("skill://pdf-processing/logo.bin")).contents[0]
            assert base64.b64decode(blob.blob) == b"\x89PNG\xff\x00"  # type: ignore[union-attr]
            for outside in ("skill://pdf-processing/leak.txt", "skill://pdf-processing/../secret.txt"):
                with pytest.raises(McpError):
                    await client.read_resource(outside)

            top = await client.request("resources/directory/read", {"uri": "skill://pdf-processing"})
            children = [(item["uri"], item.get("mimeType")) for item in top["resources"]]
            while top.get("nextCursor"):
                top = await client.request(
                    "resources/directory/read", {"uri": "skill://pdf-processing", "cursor": top["nextCursor"]}
                )
                children += [(item["uri"], item.get("mimeType")) for item in top["resources"]]
            assert children == [
                ("skill://pdf-processing/references", "inode/directory"),
                ("skill://pdf-processing/SKILL.md", "text/markdown"),
                ("skill://pdf-processing/logo.bin", "application/octet-stream"),
            ]
            sub = await client.request("resources/directory/read", {"uri": "skill://pdf-processing/references"})
            assert [item["uri"] for item in sub["resources"]] == ["skill://pdf-processing/references/regional"]
            for not_a_directory in (uri, "skill://nothing", "skill://pdf-processing/refer"):
                with pytest.raises(McpError) as refused:
                    await client.request("resources/directory/read", {"uri": not_a_directory})
                assert refused.value.code == -32602


async def test_files_are_read_when_asked_and_the_digests_follow_them(tmp_path: Path) -> None:
    root = make_skill_folder(tmp_path)
    server = trio_mcp.Server("skills")
    server.add_skill_folder(root)
    forms = root / "references" / "FORMS.md"
    async with open_in_memory(server) as client:
        forms.write_text("Forms, second edition.\n", encoding="utf-8")  # after registration: read now, not then
        read = await client.read_resource("skill://pdf-processing/references/FORMS.md")
        assert read.contents[0].text == "Forms, second edition.\n"  # type: ignore[union-attr]
        (entry,) = (await client.request("skills/list", {}))["skills"]
        sizes = {item["uri"]: (item["digest"], item["size"]) for item in entry["resources"]}
        data = b"Forms, second edition.\n"
        assert sizes["skill://pdf-processing/references/FORMS.md"] == (digest(data), len(data))


async def test_a_watched_folder_announces_its_changes(tmp_path: Path) -> None:
    root = make_skill_folder(tmp_path)
    server = trio_mcp.Server("skills")
    server.add_skill_folder(root, watch=True, poll_interval=0.05)
    changed = trio.Event()

    def on_list_changed(kind: str) -> None:
        if kind == "resources":
            changed.set()

    with trio.fail_after(10):
        async with open_in_memory(server, protocol_version="2025-11-25", on_list_changed=on_list_changed) as client:
            (root / "references" / "NEW.md").write_text("New.\n", encoding="utf-8")
            await changed.wait()
            listed = [item.uri for item in (await client.list_resources()).resources]
            assert "skill://pdf-processing/references/NEW.md" in listed
            (entry,) = (await client.request("skills/list", {}))["skills"]
            assert "skill://pdf-processing/references/NEW.md" in [item["uri"] for item in entry["resources"]]


async def test_mounted_skills_are_served_by_the_parent(tmp_path: Path) -> None:
    child = trio_mcp.Server("child")
    child.add_skill_folder(make_skill_folder(tmp_path))
    parent = trio_mcp.Server("parent")
    parent.mount("docs", child, prefix_uris=True)
    async with open_in_memory(parent) as client:
        assert SKILLS in (client.server_capabilities.extensions or {})
        (entry,) = (await client.request("skills/list", {}))["skills"]
        assert entry["uri"] == "skill://docs/pdf-processing/SKILL.md"
        for item in entry["resources"]:
            assert item["uri"].startswith("skill://docs/pdf-processing/")
            read = await client.read_resource(item["uri"])
            assert read.contents[0].uri == item["uri"]
        assert (await client.request("skills/get", {"uri": entry["uri"]}))["skill"] == entry


def test_a_symlink_loop_or_an_oversized_folder_ends_the_scan(tmp_path: Path) -> None:
    root = make_skill_folder(tmp_path)
    os.symlink(root, root / "references" / "loop")  # inside the folder, back to its top
    server = trio_mcp.Server("skills")
    server.add_skill_folder(root)
    assert "skill://pdf-processing/references/loop/SKILL.md" not in server.resources  # read once, at its place
    big = tmp_path / "big"
    big.mkdir()
    (big / "SKILL.md").write_text("---\nname: big\ndescription: d\n---\n", encoding="utf-8")
    for index in range(513):
        (big / f"{index}.md").write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="exceeds 512 files"):
        server.add_skill_folder(big)


def test_registration_refuses_what_is_not_a_skill(tmp_path: Path) -> None:
    server = trio_mcp.Server("bad")
    with pytest.raises(ValueError, match="has no SKILL.md"):
        server.add_skill_folder(tmp_path)
    wrong = tmp_path / "other-name"
    wrong.mkdir()
    (wrong / "SKILL.md").write_text("---\nname: pdf\ndescription: d\n---\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must be its folder's name"):
        server.add_skill_folder(wrong)
    with pytest.raises(ValueError, match="does not start with YAML frontmatter"):
        server.add_skill("no frontmatter")
    with pytest.raises(ValueError, match="non-empty string 'description'"):
        server.add_skill("---\nname: x\n---\n")
    with pytest.raises(ValueError, match="skill name 'Bad_Name'"):
        server.add_skill("---\nname: Bad_Name\ndescription: d\n---\n")
    with pytest.raises(ValueError, match="relative '/'-separated path"):
        server.add_skill("---\nname: x\ndescription: d\n---\n", {"../up.md": "no"})
    with pytest.raises(ValueError, match="poll_interval"):
        server.add_skill_folder(tmp_path, watch=True, poll_interval=0)
    server.add_skill("---\nname: x\ndescription: d\n---\n")
    with pytest.raises(ValueError, match="already registered"):
        server.add_skill("---\nname: x\ndescription: d\n---\n")


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_the_proxy_passes_skills_on_verbatim(nursery: trio.Nursery, tmp_path: Path, version: str) -> None:
    upstream = trio_mcp.Server("upstream")
    uri = upstream.add_skill_folder(make_skill_folder(tmp_path))
    port = await nursery.start(functools.partial(upstream.serve_http, "127.0.0.1", 0))
    with trio.fail_after(20):
        async with open_proxy(url=f"http://127.0.0.1:{port}/mcp", protocol_version=version) as server:
            async with open_in_memory(server, protocol_version="2025-11-25") as client:
                (skill,) = await client.list_skills()
                async with open_in_memory(upstream) as direct:
                    assert skill == await direct.get_skill(uri)  # the entry, digests included, unchanged
                assert (await client.read_skill_file(skill)).decode() == SKILL_MD  # verified through the proxy
                assert await client.read_skill_file(skill, "logo.bin") == b"\x89PNG\xff\x00"
                listing = await client.request("resources/directory/read", {"uri": "skill://pdf-processing"})
                assert "skill://pdf-processing/references" in [item["uri"] for item in listing["resources"]]
                with pytest.raises(McpError) as unknown:  # asked of upstream, whose answer comes back
                    await client.get_skill("skill://nothing/SKILL.md")
                assert unknown.value.code == -32602 and "nothing" in unknown.value.message


async def test_a_folder_of_skill_folders_is_served_with_their_paths(tmp_path: Path) -> None:
    make_skill_folder(tmp_path / "skills")
    refunds = tmp_path / "skills" / "acme" / "billing" / "refunds"
    (refunds / "examples").mkdir(parents=True)
    (refunds / "SKILL.md").write_text("---\nname: refunds\ndescription: Refund per policy\n---\n", encoding="utf-8")
    (refunds / "examples" / "email.md").write_text("Dear customer,\n", encoding="utf-8")
    (tmp_path / "skills" / ".hidden" / "secret").mkdir(parents=True)
    (tmp_path / "skills" / ".hidden" / "secret" / "SKILL.md").write_text("---\nname: secret\ndescription: d\n---\n")
    server = trio_mcp.Server("skills")
    uris = server.add_skills(tmp_path / "skills")
    assert uris == ["skill://acme/billing/refunds/SKILL.md", "skill://pdf-processing/SKILL.md"]
    async with open_in_memory(server) as client:
        skill = await client.get_skill("skill://acme/billing/refunds/SKILL.md")
        assert (await client.read_skill_file(skill, "examples/email.md")).decode() == "Dear customer,\n"
