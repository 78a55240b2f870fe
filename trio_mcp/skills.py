"""The skills extension (SEP-2640): a skill's entry, as ``skills/list`` and ``skills/get`` return it, read and
checked by ``Client.list_skills()`` and served by ``Server.add_skill*()`` (docs/skills.md)."""

from typing import Any, Literal

import attrs

__all__ = ["Skill", "SkillResource"]


@attrs.frozen(kw_only=True)
class SkillResource:
    """One file of a skill: its resource URI, and the digest (``sha256:<hex>``) and byte size of its content."""

    uri: str
    digest: str
    size: int


@attrs.frozen(kw_only=True)
class Skill:
    """A skill a server serves: the URI of its ``SKILL.md``, that file's frontmatter verbatim, and every file of
    the skill (or ``"dynamic"`` when its content is generated and has no stable digests)."""

    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillResource] | Literal["dynamic"]

    @property
    def name(self) -> str:
        """The skill's name (the frontmatter's, which is also the last segment of its path)."""
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])
