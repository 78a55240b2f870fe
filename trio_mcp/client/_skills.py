"""The client side of the skills extension (SEP-2640): list and get skill entries, and read a skill's files
only when asked, each verified against the entry before it is returned.

A file whose byte size or SHA-256 digest differs from the entry, a ``SKILL.md`` whose frontmatter differs from
the entry's, or a file the entry does not list raises ``SkillVerificationError``: the content is never handed
over. Nothing is read ahead: listing reads no file, and reading ``SKILL.md`` reads nothing else.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from .._skill_format import (
    SKILL_FILE,
    SKILLS_EXTENSION_ID,
    FrontmatterError,
    digest_of,
    parse_frontmatter,
    skill_from_wire,
)
from ..errors import CapabilityError, RemoteProtocolError, SkillVerificationError
from ..skills import Skill
from ..types import ServerCapabilities
from ._pages import ItemPages

__all__ = ["SkillMethods"]

logger = logging.getLogger("trio_mcp.client")


class SkillMethods:
    """``list_skills()``, ``get_skill()`` and ``read_skill_file()``, mixed into ``Client``."""

    if TYPE_CHECKING:
        max_pages: int

        @property
        def server_capabilities(self) -> ServerCapabilities: ...

        async def request(self, method: str, params: dict[str, Any] | None = None) -> Any: ...

    def _require_skills(self, method: str) -> None:
        if SKILLS_EXTENSION_ID not in (self.server_capabilities.extensions or {}):
            raise CapabilityError(method, f"{method}: the server did not declare the {SKILLS_EXTENSION_ID} extension")

    def iter_skills(self, *, max_pages: int | None = None) -> AsyncIterator[Skill]:
        """Every skill the server lists, page by page as the loop needs them (guarded like ``iter_tools``).

        An entry that breaks the extension's rules (no ``SKILL.md`` uri, a name that is not the last path
        segment, a file without digest or size) is left out with a warning: a host must not load it.
        """
        self._require_skills("skills/list")

        async def fetch(cursor: str | None) -> tuple[Sequence[Skill], str | None]:
            raw = await self.request("skills/list", {"cursor": cursor} if cursor is not None else {})
            entries = raw.get("skills") if isinstance(raw, dict) else None
            if not isinstance(entries, list):
                raise RemoteProtocolError("server sent an invalid skills/list result: no skills list")
            skills: list[Skill] = []
            for entry in entries:
                try:
                    skills.append(skill_from_wire(entry))
                except ValueError as exc:
                    logger.warning("skills/list: an entry was left out: %s", exc)
            cursor = raw.get("nextCursor")
            return skills, cursor if isinstance(cursor, str) else None

        return ItemPages("skills/list", fetch, max_pages=self.max_pages if max_pages is None else max_pages)

    async def list_skills(self) -> list[Skill]:
        """Every skill the server lists (all pages); no file is read. See ``iter_skills``."""
        return [skill async for skill in self.iter_skills()]

    async def get_skill(self, uri: str) -> Skill:
        """The current entry of the skill whose ``SKILL.md`` is at ``uri``, listed or not (``McpError`` -32602
        when the server serves no skill there)."""
        self._require_skills("skills/get")
        raw = await self.request("skills/get", {"uri": uri})
        try:
            skill = skill_from_wire(raw.get("skill") if isinstance(raw, dict) else None)
        except ValueError as exc:
            raise RemoteProtocolError(f"server sent an invalid skills/get result: {exc}") from None
        if skill.uri != uri:
            raise RemoteProtocolError(f"skills/get for {uri} answered with the entry of {skill.uri}")
        return skill

    async def read_skill_file(self, skill: Skill, path: str = SKILL_FILE) -> bytes:
        """The content of one file of ``skill``, verified against the entry (``SkillVerificationError`` if it
        differs); ``path`` is relative to the skill's root (``"references/FORMS.md"``) or a full URI, and
        defaults to ``SKILL.md``, whose frontmatter is checked too. Only that file is read."""
        root = skill.uri[: -len(SKILL_FILE)]
        uri = path if "://" in path else root + path.lstrip("/")
        listed = None if skill.resources == "dynamic" else {item.uri: item for item in skill.resources}
        if listed is not None and uri not in listed:
            raise SkillVerificationError(uri, "the skill's entry does not list this file")
        data = await self._read_bytes(uri)
        if listed is not None:
            expected = listed[uri]
            if len(data) != expected.size:
                raise SkillVerificationError(uri, f"{len(data)} bytes read, the entry says {expected.size}")
            if digest_of(data) != expected.digest:
                raise SkillVerificationError(uri, f"the content's digest is not the entry's {expected.digest}")
        if uri == skill.uri:
            try:
                frontmatter = parse_frontmatter(data.decode("utf-8"), uri)
            except (UnicodeDecodeError, FrontmatterError) as exc:
                raise SkillVerificationError(uri, f"its frontmatter cannot be read ({exc})") from None
            if frontmatter != skill.frontmatter:
                fields = sorted(
                    key
                    for key in {*frontmatter, *skill.frontmatter}
                    if frontmatter.get(key) != skill.frontmatter.get(key)
                )
                raise SkillVerificationError(uri, f"its frontmatter differs from the entry's in {', '.join(fields)}")
        return data

    async def _read_bytes(self, uri: str) -> bytes:
        raw = await self.request("resources/read", {"uri": uri})
        contents = raw.get("contents") if isinstance(raw, dict) else None
        if not isinstance(contents, list) or not contents:
            raise RemoteProtocolError(f"resources/read of {uri} returned no contents")
        item = next((c for c in contents if isinstance(c, dict) and c.get("uri") == uri), contents[0])
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            return str(item["text"]).encode("utf-8")
        if isinstance(item, dict) and isinstance(item.get("blob"), str):
            try:
                return base64.b64decode(item["blob"], validate=True)
            except binascii.Error:
                raise RemoteProtocolError(f"resources/read of {uri} returned a blob that is not base64") from None
        raise RemoteProtocolError(f"resources/read of {uri} returned neither text nor blob")
