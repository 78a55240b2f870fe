"""Transports move whole JSON-RPC messages between peers; they know framing, not MCP."""

from ._base import MessageStream, memory_stream_pair

__all__ = ["MessageStream", "memory_stream_pair"]
