"""A server named in a host's configuration file (``--config mcp.json --server NAME``), taken as the host takes it:
the command it starts, with the environment added to ours and the working directory given, or the URL it connects
to with the headers given."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from ._config_file import ConfigFile, servers_in
from ._exit import CliError

__all__ = ["ConfiguredServer", "configured_server"]


@attrs.frozen
class ConfiguredServer:
    command: list[str] = attrs.field(factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = attrs.field(factory=dict)


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise CliError(f"{what} must be an object of strings")
    return dict(value)


def configured_server(path: Path, name: str | None) -> ConfiguredServer:
    """The server ``name`` of the file at ``path`` (the only one when ``name`` is None); ``CliError`` otherwise."""
    config = ConfigFile(path)
    if config.text is None:
        raise CliError(f"no such file: {path}")
    servers = servers_in(config.document)
    if name is None:
        if len(servers) != 1:
            raise CliError(f"{path} names {len(servers)} servers; pick one with --server ({', '.join(servers)})")
        name = next(iter(servers))
    entry = servers.get(name)
    if not isinstance(entry, dict):
        raise CliError(f"{path} has no server {name!r}; it has: {', '.join(sorted(servers)) or 'none'}")
    where = f"{path}: server {name!r}"
    url = entry.get("url") or entry.get("httpUrl") or entry.get("serverUrl")
    if isinstance(url, str):
        return ConfiguredServer(url=url, headers=_strings(entry.get("headers"), f"{where}: headers"))
    command, args = entry.get("command"), entry.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise CliError(f"{where} has neither a url nor a command (a string) with args (a list of strings)")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise CliError(f"{where}: cwd must be a string")
    env = _strings(entry.get("env"), f"{where}: env")
    return ConfiguredServer(command=[command, *args], env=env or None, cwd=cwd)
