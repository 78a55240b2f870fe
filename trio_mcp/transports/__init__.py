"""Transports move whole JSON-RPC messages between peers; they know framing, not MCP."""

from .._runner import InCaller, Spawn
from .._task_set import TaskSet
from ._base import MessageStream, memory_stream_pair

__all__ = ["InCaller", "MessageStream", "Spawn", "TaskSet", "memory_stream_pair"]
