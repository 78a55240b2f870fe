"""Writing MCP servers: the ``Server`` registry, its decorators, and the per-request ``Context``."""

from ._context import Context
from ._logging import McpLogHandler
from ._server import Server, serve_http_many
from ._task_store import FileTaskStore, MemoryTaskStore, TaskStore
from ._tasks import TaskManager
from ._transform import ArgumentChange, ToolChange, Transform

__all__ = [
    "Server",
    "Context",
    "McpLogHandler",
    "serve_http_many",
    "TaskManager",
    "TaskStore",
    "MemoryTaskStore",
    "FileTaskStore",
    "Transform",
    "ToolChange",
    "ArgumentChange",
]
