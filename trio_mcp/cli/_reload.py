"""Development reload: a server in a child process, restarted when the files it is made of change.

The child is a whole ``trio-mcp run`` of its own (same interpreter, same working directory), so a restart is a clean
start: nothing of the old code stays imported. Changes are found by polling modification times, which needs nothing
beyond the standard library and behaves alike on every OS; the walk skips what is never the server's source
(``__pycache__``, dot folders such as ``.git``, virtual environments, ``node_modules``) and stops at ``MAX_FILES``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import NoReturn

import trio

from ..transports._process_tree import end_group, group_spawn_options
from ._lifeline import LIFELINE_OPTION, Lifeline

__all__ = ["Watcher", "run_reloading"]

#: How often the watched files' modification times are read.
POLL_SECONDS = 0.5
#: A change counts once the files have stayed the same this long (an editor's save is often several writes).
SETTLE_SECONDS = 0.2
#: Longest wait for the files to settle: a file rewritten without pause still restarts the server.
MAX_SETTLE_SECONDS = 2.0
#: How long a server being restarted has to exit once asked, before it (and what it started) is killed.
STOP_GRACE_SECONDS = 5.0
#: Most files one look reads; past it the rest go unwatched, and that is said once.
MAX_FILES = 10_000
_SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "venv", "env"})

#: Each file's modification time and size (a rewrite within one tick of a coarse clock still changes the size).
Stamps = dict[Path, tuple[int, int]]


def _skipped(folder: str, name: str) -> bool:
    """A folder that holds no source of the server: caches, dot folders, dependencies, virtual environments."""
    return name.startswith(".") or name in _SKIPPED_FOLDERS or os.path.isfile(os.path.join(folder, name, "pyvenv.cfg"))


class Watcher:
    """The files a server is made of: ``.py`` files under ``root``, and every file of each extra path.

    ``changed()`` returns once one of them was written, created or deleted and the writing has settled.
    """

    def __init__(self, root: Path, extra: Sequence[Path] = (), *, say: Callable[[str], None]) -> None:
        self.paths = [root.resolve(), *(path.resolve() for path in extra)]
        self._say = say
        self._warned = False
        self._stamps = self._look()

    def _files(self) -> Iterator[Path]:
        for index, path in enumerate(self.paths):
            if path.is_file():
                yield path
                continue
            for folder, subfolders, files in os.walk(path):
                subfolders[:] = [name for name in subfolders if not _skipped(folder, name)]
                for name in files:
                    if index > 0 or name.endswith(".py"):
                        yield Path(folder, name)

    def _look(self) -> Stamps:
        stamps: Stamps = {}
        for count, path in enumerate(self._files()):
            if count >= MAX_FILES:
                if not self._warned:
                    self._warned = True
                    self._say(f"watching only the first {MAX_FILES} files; name fewer or smaller folders")
                break
            try:
                status = path.stat()
            except OSError:  # deleted between the listing and the look
                continue
            stamps[path] = (status.st_mtime_ns, status.st_size)
        return stamps

    async def _looked(self) -> Stamps:
        return await trio.to_thread.run_sync(self._look, abandon_on_cancel=True)

    async def changed(self) -> list[Path]:
        """Wait for a change; return the files that changed (written, created or deleted)."""
        while (stamps := await self._looked()) == self._stamps:
            await trio.sleep(POLL_SECONDS)
        with trio.move_on_after(MAX_SETTLE_SECONDS):
            while True:
                await trio.sleep(SETTLE_SECONDS)
                settled = await self._looked()
                if settled == stamps:
                    break
                stamps = settled
        before, self._stamps = self._stamps, stamps
        return sorted(path for path in before.keys() | stamps.keys() if before.get(path) != stamps.get(path))


def _names(paths: Iterable[Path]) -> str:
    shown = [str(path) if os.path.relpath(path).startswith(".") else os.path.relpath(path) for path in paths]
    return ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")


async def _change_or_exit(process: trio.Process, watcher: Watcher) -> list[Path] | None:
    """The files that changed while the server ran, or ``None`` when it exited first."""
    changed: list[Path] | None = None
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            nonlocal changed
            changed = await watcher.changed()
            nursery.cancel_scope.cancel()

        async def reap() -> None:
            await process.wait()
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        nursery.start_soon(reap)
    return changed


async def run_reloading(argv: Sequence[str], watcher: Watcher, *, say: Callable[[str], None]) -> NoReturn:
    """Run ``argv`` (a ``trio-mcp run`` line) until cancelled, restarting it on every change ``watcher`` sees.

    A server that exits by itself (an import error, a crash) stays down until the next change: its own output said
    why. Cancellation (Ctrl-C) ends the server's whole process tree before it returns; if this process dies without
    that (SIGKILL, a crash), the server stops by itself, on its ``--lifeline``.
    """
    say(f"watching {_names(watcher.paths)} for changes")
    with Lifeline() as lifeline:
        while True:
            process = await trio.lowlevel.open_process(
                [*argv, LIFELINE_OPTION], stdin=lifeline.child_stdin, **group_spawn_options()
            )
            try:
                changed = await _change_or_exit(process, watcher)
                if changed is None:
                    say(f"server exited with status {process.returncode}; waiting for a change to restart it")
                    changed = await watcher.changed()
            finally:
                await end_group(process, grace=STOP_GRACE_SECONDS)
            say(f"{_names(changed)} changed; restarting")
