"""Writing MCP servers: the ``Server`` registry, its decorators, and the per-request ``Context``."""

from ._context import Context
from ._logging import McpLogHandler
from ._server import Server

__all__ = ["Server", "Context", "McpLogHandler"]
