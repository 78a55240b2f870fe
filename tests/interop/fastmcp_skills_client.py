"""FastMCP as a skills host against a server started over stdio, for test_skills_interop.py:

    .interop/fastmcp-venv/bin/python fastmcp_skills_client.py <command> [args...]

Lists the skills and reads each one whole (FastMCP's read_skill verifies every file's size and digest, and the
frontmatter); prints one JSON line per skill: {"uri", "files": {path: text}} or {"uri", "refused": reason}.
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from fastmcp.skills import SkillsClientExtension


async def main() -> None:
    transport = StdioTransport(command=sys.argv[1], args=sys.argv[2:])
    async with Client(transport, extensions=[SkillsClientExtension()]) as client:
        for entry in await client.list_skills():
            uri = str(entry.uri)
            try:
                skill = await client.read_skill(uri)
            except ValueError as exc:
                print(json.dumps({"uri": uri, "refused": str(exc)}))
                continue
            files = {path: data.decode() for path, data in skill.files.items()}
            print(json.dumps({"uri": uri, "files": files}))


asyncio.run(main())
