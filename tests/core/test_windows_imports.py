"""Nothing in the package fails at import on Windows: every module imported again as Windows would, with
``sys.platform`` set to "win32" and what only POSIX has (modules, signals, os functions) taken away."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT

#: Imports every module once as itself (so the dependencies load for the real OS), then forgets the package and
#: imports every module again as Windows would; prints the modules that failed, with why. (``__main__`` is left out:
#: importing it runs the command line.)
SCRIPT = r"""
import importlib, os, pkgutil, select, signal, sys, traceback
import trio
import trio_mcp

modules = pkgutil.walk_packages(trio_mcp.__path__, "trio_mcp.")
names = sorted(m.name for m in modules if not m.name.endswith(".__main__"))  # __main__ runs the program
for name in names:
    importlib.import_module(name)
for name in [n for n in sys.modules if n == "trio_mcp" or n.startswith("trio_mcp.")]:
    del sys.modules[name]

for module in ("fcntl", "termios", "tty", "pty", "resource", "pwd", "grp", "posix", "syslog", "_posixsubprocess"):
    sys.modules[module] = None  # import raises ImportError, as on Windows
for owner, attributes in (
    (os, ("killpg", "setsid", "getpgid", "fork", "getuid", "geteuid", "getppid", "WNOHANG", "O_NONBLOCK")),
    (signal, ("SIGKILL", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE", "SIGCHLD", "SIGALRM")),
    (select, ("poll", "POLLIN", "POLLPRI", "epoll")),
    (trio.lowlevel, ("FdStream",)),
):
    for attribute in attributes:
        if hasattr(owner, attribute):
            delattr(owner, attribute)
sys.platform = "win32"

failed = []
for name in ["trio_mcp", *names]:
    try:
        importlib.import_module(name)
    except BaseException:
        failed.append(f"{name}: {traceback.format_exc(limit=-2)}")
print("\n".join(failed) if failed else f"imported {len(names) + 1} modules")
"""


def test_every_module_imports_on_windows() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True
    )
    assert done.stdout.startswith("imported "), done.stdout
    assert int(done.stdout.split()[1]) > 100  # every module, not a few
