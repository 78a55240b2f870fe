"""The hosts ``trio-mcp install`` knows: where each keeps its MCP servers on each OS, and how it spells one.

Each host's documented format: Claude Desktop, Claude Code (user scope), Cursor (global) and Gemini CLI (user
settings) keep servers under ``mcpServers``; VS Code (the user profile's ``mcp.json``) under ``servers``, each with
a ``type``. Only Gemini CLI documents a working directory (``cwd``) for a stdio server.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

__all__ = ["HOSTS", "Host", "ServerEntry"]


@attrs.frozen
class ServerEntry:
    """What a host is told to start (``command``) or to connect to (``url``), independent of its spelling."""

    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str | None = None
    url: str | None = None


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())


def _app_data(platform: str, env: Mapping[str, str]) -> Path:
    """Where desktop applications keep their settings: %APPDATA%, ~/Library/Application Support, $XDG_CONFIG_HOME."""
    if platform == "win32":
        return Path(env["APPDATA"]) if env.get("APPDATA") else _home(env) / "AppData" / "Roaming"
    if platform == "darwin":
        return _home(env) / "Library" / "Application Support"
    return Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else _home(env) / ".config"


def _stdio(entry: ServerEntry, *, typed: bool) -> dict[str, Any]:
    spelled: dict[str, Any] = {"type": "stdio"} if typed else {}
    spelled["command"] = entry.command
    spelled["args"] = list(entry.args)
    if entry.env:
        spelled["env"] = dict(entry.env)
    return spelled


def _claude_desktop(entry: ServerEntry) -> dict[str, Any]:
    return _stdio(entry, typed=False)


def _claude_code(entry: ServerEntry) -> dict[str, Any]:
    if entry.url is not None:
        return {"type": "http", "url": entry.url}
    return _stdio(entry, typed=True)


def _cursor(entry: ServerEntry) -> dict[str, Any]:
    if entry.url is not None:
        return {"url": entry.url}
    return _stdio(entry, typed=False)


def _vscode(entry: ServerEntry) -> dict[str, Any]:
    if entry.url is not None:
        return {"type": "http", "url": entry.url}
    return _stdio(entry, typed=True)


def _gemini(entry: ServerEntry) -> dict[str, Any]:
    if entry.url is not None:
        return {"httpUrl": entry.url}
    spelled = _stdio(entry, typed=False)
    if entry.cwd is not None:
        spelled["cwd"] = entry.cwd
    return spelled


@attrs.frozen
class Host:
    """One host: its display name, where its file is, the key its servers sit under, and how it spells one."""

    title: str
    path: Callable[[str, Mapping[str, str]], Path]
    servers_key: str
    spell: Callable[[ServerEntry], dict[str, Any]]
    #: Whether the host connects to an HTTP server itself; if not, ``install --transport http`` starts a stdio proxy.
    speaks_http: bool = True
    #: Whether the host's file takes a working directory; if not, a module target gets ``PYTHONPATH`` instead.
    takes_cwd: bool = False


HOSTS: dict[str, Host] = {
    "claude-desktop": Host(
        "Claude Desktop",
        lambda platform, env: _app_data(platform, env) / "Claude" / "claude_desktop_config.json",
        "mcpServers",
        _claude_desktop,
        speaks_http=False,
    ),
    "claude-code": Host("Claude Code", lambda platform, env: _home(env) / ".claude.json", "mcpServers", _claude_code),
    "cursor": Host("Cursor", lambda platform, env: _home(env) / ".cursor" / "mcp.json", "mcpServers", _cursor),
    "vscode": Host(
        "VS Code", lambda platform, env: _app_data(platform, env) / "Code" / "User" / "mcp.json", "servers", _vscode
    ),
    "gemini": Host(
        "Gemini CLI",
        lambda platform, env: _home(env) / ".gemini" / "settings.json",
        "mcpServers",
        _gemini,
        takes_cwd=True,
    ),
}
