"""A server process started in a group of its own, and that group stopped: the one place where POSIX and Windows
differ for the stdio client.

POSIX: a new session (process group), SIGTERM then SIGKILL to the whole group. Windows has no signals to ask a
console process to stop and no process groups to signal: the tree under the process is ended with
``taskkill /T /F``, and ``TerminateProcess`` when that fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

import trio

__all__ = ["end_group", "group_spawn_options", "stop_group"]

#: Longest wait for ``taskkill`` to end a process tree.
_TASKKILL_TIMEOUT = 5.0


def group_spawn_options() -> dict[str, Any]:
    """Keyword arguments of ``open_process`` that start the process in a group of its own."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


async def stop_group(process: trio.Process, *, force: bool) -> None:
    """Ask the process and what it started to stop (``force``: make them), even once the process itself is gone."""
    if sys.platform == "win32":
        await _taskkill_tree(process)
    else:
        _signal_group(process.pid, signal.SIGKILL if force else signal.SIGTERM)
        await trio.lowlevel.checkpoint()


def _signal_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


async def _taskkill_tree(process: trio.Process) -> None:
    """Windows: end the process and its descendants; a process that is already gone leaves nothing to end (its
    children are no longer found by its id, which is why the client ends the tree before the leader exits)."""
    if process.returncode is not None:
        await trio.lowlevel.checkpoint()
        return
    with trio.move_on_after(_TASKKILL_TIMEOUT):
        try:
            done = await trio.run_process(
                ["taskkill", "/PID", str(process.pid), "/T", "/F"],
                check=False,
                capture_stdout=True,
                capture_stderr=True,
            )
        except OSError:
            done = None
        if done is not None and done.returncode == 0:
            return
    if process.returncode is None:
        process.kill()


async def end_group(process: trio.Process, *, grace: float) -> None:
    """End the process and what it started, even when cancelled: asked first, made once ``grace`` seconds pass."""
    with trio.CancelScope(shield=True):
        if process.returncode is None:
            await stop_group(process, force=False)
            with trio.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            await stop_group(process, force=True)
            await process.wait()
        else:  # the leader is gone; what it started in its group goes too
            await stop_group(process, force=False)
