"""Writing MCP servers: the ``Server`` registry, its decorators, and the per-request ``Context``."""

from ._context import Context
from ._logging import McpLogHandler
from ._server import Server, serve_http_many

__all__ = ["Server", "Context", "McpLogHandler", "serve_http_many"]
