"""The ``trio-mcp`` command line, parsed with the standard library's argparse."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .._version import __version__
from .._wire.versions import KNOWN_VERSIONS
from ._install import add_install_commands
from ._lifeline import LIFELINE_OPTION

__all__ = ["build_parser", "parse"]

_DESCRIPTION = """\
Serve MCP servers written with trio_mcp, and talk to any MCP server from the shell.

exit status: 0 ok, 1 the server answered with an error (a tool error), 2 usage, 3 connection or protocol
failure, 130 interrupted (Ctrl-C)."""

_LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

_TARGET_HELP = """\
the server is named by --url URL (Streamable HTTP or HTTP+SSE, era probed; ws:// for WebSocket), by the
command that starts it, after '--' at the end of the line (stdio), e.g.
  trio-mcp call echo text=hi -- python server.py
or by --config FILE --server NAME: started or reached exactly as a host reads it from that file."""


_DEV_DESCRIPTION = """\
Serve TARGET (what run accepts) on 127.0.0.1 over Streamable HTTP, restart it whenever a .py file under its
folder (or a file under a --watch PATH) changes, and open the official MCP Inspector on it. The Inspector (one
pinned release) is installed with npm into a per-user cache on first use; it needs Node.js >= 22.19 (the node on
PATH, or TRIO_MCP_NODE=/path/to/node). TRIO_MCP_INSPECTOR_DIR installs it elsewhere; CLIENT_PORT and
MCP_SANDBOX_PORT fix the Inspector's own ports (default: free ones).

If the server fails to import or crashes, its one-line error is shown and the next change starts it again."""


def _client_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("server")
    group.add_argument("--url", help="the server's MCP endpoint (http://, https://, ws://)")
    group.add_argument("--config", metavar="FILE", help="a host's configuration file (mcpServers or servers)")
    group.add_argument("--server", metavar="NAME", help="with --config: the server it names (default: its only one)")
    group.add_argument(
        "--header",
        "-H",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for --url servers (repeatable), e.g. 'Authorization: Bearer ...'",
    )
    group.add_argument(
        "--protocol-version",
        choices=KNOWN_VERSIONS,
        default=None,
        help="speak this revision instead of probing for the newest the server speaks",
    )
    group.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long each request may take in all, progress or not (default 60)",
    )
    group.add_argument(
        "--connect-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for the connection and handshake (default 30)",
    )
    group.add_argument(
        "--log-level",
        choices=_LOG_LEVELS,
        default=None,
        help="ask the server for log messages at this level and above (shown on stderr; a server's "
        "own default applies otherwise)",
    )
    group.add_argument("--json", action="store_true", help="print the result as JSON, for scripts")
    group.add_argument("--verbose", "-v", action="store_true", help="show a stdio server's stderr as it runs")
    return common


def _port(text: str) -> int:
    """A TCP port number: refused by name rather than bound as some other port (the kernel wraps 99999)."""
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535; 0 picks a free one)")
    return int(text)


def _serve_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--transport",
        "-t",
        choices=("stdio", "http", "sse", "ws"),
        default="stdio",
        help="stdio (default); http serves Streamable HTTP on /mcp and HTTP+SSE on /sse; sse is the "
        "same listener, announcing /sse; ws is WebSocket (outside the MCP specification)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", "-p", type=_port, default=8000, help="port to bind (default 8000; 0 picks a free one)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (every subcommand)."""
    parser = argparse.ArgumentParser(
        prog="trio-mcp", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"trio-mcp {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = _client_options()

    def client_command(name: str, help: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=help,
            description=f"{help}\n\n{_TARGET_HELP}",
            parents=[common],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    run = commands.add_parser(
        "run",
        help="serve a trio_mcp Server found in a file or module",
        description="Serve the Server object found in a file or module. TARGET is "
        "path/to/file.py or package.module, optionally followed by :NAME (default: the "
        "object called server, mcp or app, else the only Server there).",
    )
    run.add_argument("target", metavar="TARGET", help="path/to/file.py[:NAME] or module[:NAME]")
    _serve_options(run)
    run.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error", "critical"),
        default=None,
        help="show the server's log records at this level and above on stderr (default warning; a crashed "
        "tool's traceback is an error; debug also shows a failing import's traceback); a target that configures "
        "logging itself keeps its handlers",
    )
    run.add_argument(
        "--reload",
        action="store_true",
        help="restart the server when a .py file under the target's folder changes (development)",
    )
    run.add_argument(
        "--workers",
        "-w",
        type=int,
        default=1,
        metavar="N",
        help="serve HTTP from N worker processes sharing the port, restarted when they die; "
        "SIGTERM or Ctrl-C drains them (default 1: this process serves)",
    )
    run.add_argument(
        "--redis",
        metavar="URL",
        help="share sessions, their events and task records with every process given this Redis "
        "(redis://HOST:PORT/DB), so any worker or machine serves any session",
    )
    run.add_argument("--certfile", metavar="PEM", help="serve HTTPS with this certificate chain (with --keyfile)")
    run.add_argument("--keyfile", metavar="PEM", help="the certificate's private key")
    run.add_argument(
        "--drain-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="with --workers: how long in-flight requests get after SIGTERM or Ctrl-C (default 10)",
    )
    # Hidden: dev and run --reload start their server with it (see _lifeline); stdin is a pipe, serve until it closes.
    run.add_argument(LIFELINE_OPTION, action="store_true", help=argparse.SUPPRESS)

    dev = commands.add_parser(
        "dev",
        help="develop a server: serve it, restart it when its source changes, and open the MCP Inspector on it",
        description=_DEV_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dev.add_argument("target", metavar="TARGET", help="path/to/file.py[:NAME] or module[:NAME], as for run")
    dev.add_argument(
        "--transport",
        "-t",
        choices=("http", "stdio"),
        default="http",
        help="http (default): the server on 127.0.0.1, restarted on changes; stdio: the Inspector starts it "
        "on each Connect, and nothing is watched",
    )
    dev.add_argument("--port", "-p", type=_port, default=None, help="the server's port (default: a free one)")
    dev.add_argument(
        "--watch",
        action="append",
        default=[],
        metavar="PATH",
        help="also restart when a file under PATH changes (repeatable; the target's folder is always watched)",
    )
    dev.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error", "critical"),
        default=None,
        help="show the server's log records at this level and above (as for run)",
    )
    dev.add_argument("--no-open", action="store_true", help="print the Inspector's URL without opening a browser")
    dev.add_argument("--no-inspector", action="store_true", help="serve and reload only, with no Inspector")

    listing = client_command("list", "list a server's tools, resources, resource templates or prompts")
    listing.add_argument("what", choices=("tools", "resources", "templates", "prompts"))

    call = client_command(
        "call", "call a tool; arguments are key=value words (converted by the tool's input schema) or one JSON object"
    )
    call.add_argument("tool", metavar="TOOL")
    call.add_argument("arguments", nargs="*", metavar="key=value", help="an argument, or a JSON object of them")

    read = client_command("read", "read a resource")
    read.add_argument("uri", metavar="URI")

    prompt = client_command("prompt", "render a prompt")
    prompt.add_argument("name", metavar="NAME")
    prompt.add_argument("arguments", nargs="*", metavar="key=value", help="an argument (always a string)")

    skills = client_command("skills", "list a server's skills, or read one skill's file, verified against its entry")
    skills.add_argument("action", choices=("list", "read"))
    skills.add_argument("uri", nargs="?", metavar="SKILL_URI", help="read: the URI of the skill's SKILL.md")
    skills.add_argument("path", nargs="?", metavar="FILE", help="read: a file of the skill (default SKILL.md)")

    client_command("info", "show the server's era, protocol revision, capabilities, identity and instructions")

    proxy = client_command(
        "proxy",
        "serve any MCP server as a trio_mcp server: an era bridge (e.g. a stdio "
        "server as a stateless HTTP endpoint), forwarding progress, logs and cancellation",
    )
    _serve_options(proxy)
    proxy.add_argument("--name", help="the name the proxy gives itself (default: the upstream server's)")

    doctor = commands.add_parser(
        "doctor", help="check an HTTP deployment for what breaks clients, and say how to fix each finding"
    )
    doctor.add_argument("url", metavar="URL", help="the server's MCP endpoint, e.g. https://example.com/mcp")
    doctor.add_argument(
        "--header",
        "-H",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header to send with every probe (repeatable)",
    )
    doctor.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="per probe (default 10)")
    doctor.add_argument("--json", action="store_true", help="print the findings as JSON")
    add_install_commands(commands)
    return parser


#: The commands whose trailing words (``key=value``, a JSON object) may come before, between or after options.
_TAKES_WORDS = ("call", "prompt")


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse ``argv``; everything after the first ``--`` is the stdio server's command (``server_command``).

    Exits with status 2 and a usage message for a bad command line (argparse's own behaviour).
    """
    words = list(argv)
    server_command: list[str] = []
    if "--" in words:
        at = words.index("--")
        words, server_command = words[:at], words[at + 1 :]
    parser = build_parser()
    args, extra = parser.parse_known_args(words)
    if extra and args.command in _TAKES_WORDS and not any(word.startswith("-") for word in extra):
        args.arguments += extra  # key=value words after an option: `call TOOL --json a=1` (argparse stops at --json)
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if server_command and args.command in ("run", "dev", "doctor", "install", "uninstall"):
        parser.error(f"'{args.command}' takes no server command after '--'")
    args.server_command = server_command
    return args
