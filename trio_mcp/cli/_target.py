"""Find the ``Server`` that ``trio-mcp run`` serves: ``path/to/file.py[:name]`` or ``package.module[:name]``."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from ..server import Server
from ._exit import CliError

__all__ = ["import_spec", "load_server", "split_target", "watched_root"]

#: Names tried, in order, when the target names no object.
_CONVENTIONAL_NAMES = ("server", "mcp", "app")


def split_target(target: str) -> tuple[str, str | None]:
    """``"app.py:weather"`` → ``("app.py", "weather")``; a drive letter or a bare path keeps its colons."""
    where, sep, name = target.rpartition(":")
    if sep and where and name.isidentifier() and not (len(where) == 1 and where.isalpha()):
        return where, name
    return target, None


def _is_file(where: str) -> bool:
    return where.endswith(".py") or os.sep in where or (os.altsep is not None and os.altsep in where)


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise CliError(f"no such file: {path}")
    # Import it under its own name (not "__main__"), so its `if __name__ == "__main__":` block stays idle,
    # with its folder first on sys.path so that its sibling modules import as they do when it runs directly.
    sys.path.insert(0, str(path.parent.resolve()))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {path} (not a Python file?)")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module


def _import_module(name: str) -> ModuleType:
    sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            raise CliError(
                f"no module named {name!r} (is it installed, or did you mean a path to a .py file?)"
            ) from None
        raise


def load_server(target: str) -> Server:
    """Import the target and return its ``Server``: the one named, else ``server``/``mcp``/``app``, else the only one.

    Raises ``CliError`` naming what was looked for when there is none (or several to choose from), and when
    importing fails (a syntax error, a failing import, an exception at import time): one line saying what and
    where, the exception itself chained as the cause, for whoever wants the traceback.
    """
    where, name = split_target(target)
    try:
        module = _import_file(Path(where)) if _is_file(where) else _import_module(where)
    except CliError:
        raise
    except Exception as exc:
        raise CliError(f"cannot import {where}: {_one_line(exc)}") from exc
    if name is not None:
        found = getattr(module, name, None)
        if not isinstance(found, Server):
            what = "nothing" if found is None else f"a {type(found).__name__}"
            raise CliError(f"{where}: {name!r} is {what}, not a trio_mcp.Server")
        return found
    for conventional in _CONVENTIONAL_NAMES:
        found = getattr(module, conventional, None)
        if isinstance(found, Server):
            return found
    servers = {key: value for key, value in vars(module).items() if isinstance(value, Server)}
    if len(servers) == 1:
        return next(iter(servers.values()))
    if not servers:
        raise CliError(f"{where} defines no trio_mcp.Server at module level")
    raise CliError(f"{where} defines several servers ({', '.join(sorted(servers))}); pick one with {where}:NAME")


def _one_line(error: Exception) -> str:
    """``ZeroDivisionError: division by zero (server.py, line 3)``: the error and the line of Python that raised it."""
    if isinstance(error, SyntaxError):  # its text names the file and line already
        return f"{type(error).__name__}: {error}"
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if not frame.filename.startswith("<")]
    where = f" ({_short(frames[-1].filename)}, line {frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {error}{where}"


def _short(filename: str) -> str:
    relative = os.path.relpath(filename)
    return relative if not relative.startswith("..") else filename


def import_spec(target: str, server: Server) -> tuple[str, str]:
    """``"module:attribute"`` naming ``server`` (already loaded from ``target``) for a process that imports it
    afresh, and the folder that process needs first on its path (the file's, or the working directory)."""
    where, name = split_target(target)
    if _is_file(where):
        module_name, folder = Path(where).stem, str(Path(where).resolve().parent)
    else:
        module_name, folder = where, os.getcwd()
    if name is None:
        module = sys.modules[module_name]
        name = next(key for key, value in vars(module).items() if value is server)
    return f"{module_name}:{name}", folder


def watched_root(target: str) -> Path:
    """The folder ``--reload`` watches: the target file's, or the top-level package's (found without importing it)."""
    where, _ = split_target(target)
    if _is_file(where):
        if not Path(where).is_file():  # nothing to wait for a change of
            raise CliError(f"no such file: {where}")
        return Path(where).resolve().parent
    sys.path.insert(0, os.getcwd())
    top = where.split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        raise CliError(f"no module named {top!r}")
    return Path(spec.origin).resolve().parent  # a package's folder, or the folder holding the module
