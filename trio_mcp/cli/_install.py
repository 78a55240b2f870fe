"""``trio-mcp install HOST TARGET`` and ``trio-mcp uninstall HOST NAME``: a server put into (or taken out of) the
configuration of the host a user already has, with the exact interpreter that runs this command."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ._config_file import ConfigFile
from ._exit import OK, CliError
from ._hosts import HOSTS, Host, ServerEntry

__all__ = ["add_install_commands", "install_command", "uninstall_command"]

_HOST_HELP = ", ".join(f"{key} ({host.title})" for key, host in HOSTS.items())


def add_install_commands(commands: Any) -> None:
    """The ``install`` and ``uninstall`` subcommands, added to the parser's subcommands."""
    install = commands.add_parser(
        "install",
        help="put a server into a host's configuration, started by this Python",
        description="Write a server into the configuration file of a host (merged with what is there; the previous "
        f"file kept as .bak). HOST is one of: {_HOST_HELP}. TARGET is what `trio-mcp run` takes; the host then "
        "starts it with this very interpreter. Restart the host afterwards.",
    )
    install.add_argument("host", choices=sorted(HOSTS), metavar="HOST")
    install.add_argument("target", nargs="?", metavar="TARGET", help="path/to/file.py[:NAME] or module[:NAME]")
    install.add_argument("--name", help="the name the host shows (default: the Server's own name)")
    install.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for the server (repeatable)",
    )
    install.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default): the host starts TARGET; http: the host connects to --url (no TARGET)",
    )
    install.add_argument("--url", help="with --transport http: the server's MCP endpoint")
    install.add_argument("--dry-run", action="store_true", help="print the file as it would be written; write nothing")

    uninstall = commands.add_parser(
        "uninstall",
        help="take a server out of a host's configuration",
        description=f"Remove the server NAME from a host's configuration file. HOST is one of: {_HOST_HELP}.",
    )
    uninstall.add_argument("host", choices=sorted(HOSTS), metavar="HOST")
    uninstall.add_argument("name", metavar="NAME")
    uninstall.add_argument(
        "--dry-run", action="store_true", help="print the file as it would be written; write nothing"
    )


def _config(host: Host) -> ConfigFile:
    return ConfigFile(host.path(sys.platform, os.environ))


def _servers(config: ConfigFile, host: Host) -> dict[str, Any]:
    servers = config.document.setdefault(host.servers_key, {})
    if not isinstance(servers, dict):
        raise CliError(f"{config.path}: {host.servers_key!r} is not a JSON object; it was left unchanged")
    return servers


def _parse_env(values: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for value in values:
        key, sep, content = value.partition("=")
        if not sep or not key:
            raise CliError(f"--env {value!r}: expected KEY=VALUE")
        env[key] = content
    return env


def _stdio_entry(args: argparse.Namespace, host: Host, env: dict[str, str]) -> tuple[str, ServerEntry]:
    """The server TARGET names, loaded here (so a broken one fails now, not in the host), as ``module:attribute``
    run by this interpreter, with its folder as working directory or, for hosts that take none, on PYTHONPATH."""
    from ._target import import_spec, load_server

    if args.url:
        raise CliError("--url goes with --transport http")
    if not args.target:
        raise CliError("which server? give TARGET (path/to/file.py[:NAME] or module[:NAME]), as for trio-mcp run")
    server = load_server(args.target)
    spec, folder = import_spec(args.target, server)
    # The host starts it without this shell's environment: what makes the import work here goes along.
    path = [None if host.takes_cwd else folder, env.get("PYTHONPATH"), os.environ.get("PYTHONPATH")]
    if any(path):
        env["PYTHONPATH"] = os.pathsep.join(filter(None, path))
    entry = ServerEntry(command=sys.executable, args=("-m", "trio_mcp", "run", spec), env=env, cwd=folder)
    return args.name or server.info.name, entry


def _http_entry(args: argparse.Namespace, host: Host, env: dict[str, str]) -> tuple[str, ServerEntry]:
    """A host that connects to URLs gets the URL; one that only starts commands gets ``trio-mcp proxy`` to it."""
    if not args.url:
        raise CliError("--transport http needs --url URL (the server's MCP endpoint)")
    if args.target:
        raise CliError("--transport http connects to --url: give no TARGET")
    if not args.name:
        raise CliError("--transport http needs --name NAME (the name the host shows)")
    if host.speaks_http:
        if env:
            raise CliError(f"--env applies to servers {host.title} starts, not to --url ones")
        return args.name, ServerEntry(url=args.url)
    proxy = ("-m", "trio_mcp", "proxy", "--url", args.url)
    return args.name, ServerEntry(command=sys.executable, args=proxy, env=env)


def _finish(config: ConfigFile, dry_run: bool, done: str) -> int:
    if dry_run:
        print(config.render(), end="")
        print(f"(dry run: {config.path} left unchanged)", file=sys.stderr)
        return OK
    backup = config.write()
    print(done + (f" (the previous file is {backup})" if backup is not None else ""))
    return OK


def install_command(args: argparse.Namespace) -> int:
    host = HOSTS[args.host]
    env = _parse_env(args.env)
    name, entry = (_http_entry if args.transport == "http" else _stdio_entry)(args, host, env)
    config = _config(host)
    servers = _servers(config, host)
    verb = "updated" if name in servers else "installed"
    servers[name] = host.spell(entry)
    return _finish(config, args.dry_run, f"{verb} {name!r} in {config.path}; restart {host.title} to start it")


def uninstall_command(args: argparse.Namespace) -> int:
    host = HOSTS[args.host]
    config = _config(host)
    servers = _servers(config, host)
    if args.name not in servers:
        names = ", ".join(sorted(servers)) or "none"
        raise CliError(f"{host.title} has no server {args.name!r} in {config.path}; it has: {names}")
    del servers[args.name]
    return _finish(config, args.dry_run, f"removed {args.name!r} from {config.path}; restart {host.title}")
