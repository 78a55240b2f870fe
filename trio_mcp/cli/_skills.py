"""``trio-mcp skills list`` and ``trio-mcp skills read SKILL_URI [FILE]``: a server's skills (SEP-2640), and one
skill's files, each verified against the skill's entry before it is printed."""

from __future__ import annotations

import argparse
import sys

from .._skill_format import skill_to_wire
from ..client import Client
from ..errors import SkillVerificationError
from ._exit import OK, TOOL_ERROR, USAGE, CliError
from ._render import emit_json

__all__ = ["skills_command"]


async def skills_command(client: Client, args: argparse.Namespace) -> int:
    """``list`` every skill, or ``read`` one file of the skill at ``args.uri`` (its SKILL.md by default)."""
    if args.action == "list":
        skills = await client.list_skills()
        if args.json:
            emit_json([skill_to_wire(skill) for skill in skills])
            return OK
        if not skills:
            print("(no skills)")
        for skill in skills:
            files = "dynamic" if skill.resources == "dynamic" else f"{len(skill.resources)} files"
            print(f"{skill.uri}  ({files})  — {skill.description}")
        return OK
    if args.uri is None:
        raise CliError("skills read needs the URI of a skill's SKILL.md", USAGE)
    skill = await client.get_skill(args.uri)
    try:
        data = await client.read_skill_file(skill, args.path or "SKILL.md")
    except SkillVerificationError as exc:
        raise CliError(str(exc), TOOL_ERROR) from None
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return OK
