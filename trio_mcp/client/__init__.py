"""Talking to MCP servers: the ``Client`` and the ways to open one."""

from ._client import Client
from ._stdio import connect_stdio_client, open_stdio_client

__all__ = ["Client", "open_stdio_client", "connect_stdio_client"]
