"""FastMCP serving a folder of skill folders over stdio (its SEP-2640 provider), for test_skills_interop.py:

.interop/fastmcp-venv/bin/python fastmcp_skills_server.py <folder of skill folders>
"""

import sys

from fastmcp import FastMCP
from fastmcp.skills.provider import SkillsDirectoryProvider

mcp = FastMCP("fastmcp-skills")
mcp.add_provider(SkillsDirectoryProvider(sys.argv[1]))
mcp.run(show_banner=False)
