"""Serving skills (SEP-2640): a skill from a folder or from code, its files as ``skill://`` resources, and the
``skills/list``, ``skills/get`` and ``resources/directory/read`` methods.

A folder is read lazily: registering it reads only ``SKILL.md``; a file's bytes are read when a client reads it,
and the digests of a listing are computed when first asked for, then kept until a file's size, mtime or inode
changes. Every path is resolved and must stay inside the folder: ``..`` and symlinks that leave it are refused,
on registration and again on each read. With ``watch=True`` the folder is polled while the server runs, and a
change (a file added, removed or edited) re-registers its files and tells clients ``resources/list_changed``.
"""

from __future__ import annotations

import logging
import mimetypes
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import trio

from .._custom import CustomMethods
from .._pagination import CursorCodec, page_result
from .._skill_format import (
    DIRECTORY_MIME_TYPE,
    SKILL_FILE,
    SKILLS_EXTENSION_ID,
    check_skill_name,
    digest_of,
    parse_frontmatter,
    skill_to_wire,
)
from .._wire.versions import MODERN_VERSIONS
from ..errors import INVALID_PARAMS, McpError, ResourceNotFound
from ..skills import Skill, SkillResource
from ._resources import ResourceDefinition, ResourceOptions

if TYPE_CHECKING:
    from typing_extensions import Unpack


class SkillHost(Protocol):
    """What a ``SkillSet`` needs of its server (``ServerCore``): its resources, custom methods and mounts."""

    resources: dict[str, ResourceDefinition]
    custom: CustomMethods
    page_size: int | None
    cursors: CursorCodec

    @property
    def mounts(self) -> Sequence[Any]:
        """Each ``Mounted`` server: ``.child.skills``, ``.uri(uri)``, ``.skill_entry(skill)``."""

    def add_resource(
        self, fn: Callable[..., Any], uri: str, **options: Unpack[ResourceOptions]
    ) -> ResourceDefinition: ...

    def remove_resource(self, uri: str) -> None: ...


__all__ = ["SkillSet", "SkillSource", "folder_skill", "skill_folders", "code_skill"]

logger = logging.getLogger("trio_mcp.server")

#: The limits every host accepts (SEP-2640): registering a bigger skill is refused.
MAX_FILES: Final = 512
MAX_TOTAL_BYTES: Final = 16 * 1024 * 1024

_Signature = tuple[tuple[str, int, int, int], ...]


def _mime_type(path: str) -> str:
    if path.endswith(".md"):
        return "text/markdown"
    guessed, _ = mimetypes.guess_type(path, strict=False)
    return guessed or "application/octet-stream"


def _check_prefix(prefix: str) -> str:
    segments = prefix.strip("/").split("/") if prefix.strip("/") else []
    if any(not segment or segment in (".", "..") for segment in segments):
        raise ValueError(f"prefix must be '/'-separated path segments, not {prefix!r}")
    return "/".join(segments)


class SkillSource:
    """One skill: its ``SKILL.md`` URI and name, its files (paths relative to its root, ``/``-separated), and
    how to read them."""

    def __init__(self, name: str, prefix: str, frontmatter: dict[str, Any]) -> None:
        self.name = name
        self.root_uri = f"skill://{prefix + '/' if prefix else ''}{name}"
        self.uri = f"{self.root_uri}/{SKILL_FILE}"
        self.frontmatter = frontmatter

    def paths(self) -> list[str]:
        raise NotImplementedError

    async def read(self, path: str) -> bytes:
        raise NotImplementedError

    def size(self, path: str) -> int | None:
        """The file's size now, if it can be known without reading it."""
        return None

    async def entry(self) -> Skill:
        raise NotImplementedError


class _CodeSkill(SkillSource):
    """A skill whose files are held in memory (``Server.add_skill``)."""

    def __init__(self, name: str, prefix: str, frontmatter: dict[str, Any], files: dict[str, bytes]) -> None:
        super().__init__(name, prefix, frontmatter)
        self.files = files
        self._entry = Skill(
            uri=self.uri,
            frontmatter=frontmatter,
            resources=[
                SkillResource(uri=f"{self.root_uri}/{path}", digest=digest_of(data), size=len(data))
                for path, data in files.items()
            ],
        )

    def paths(self) -> list[str]:
        return list(self.files)

    async def read(self, path: str) -> bytes:
        return self.files[path]

    def size(self, path: str) -> int | None:
        return len(self.files[path])

    async def entry(self) -> Skill:
        return self._entry


class _FolderSkill(SkillSource):
    """A skill read from a folder on disk, lazily (see the module's docstring)."""

    def __init__(
        self, root: Path, name: str, prefix: str, frontmatter: dict[str, Any], poll_interval: float | None
    ) -> None:
        super().__init__(name, prefix, frontmatter)
        self.root = root
        self.poll_interval = poll_interval
        self.signature, self.stats = _scan(root, warn=True)
        self._entry: tuple[_Signature, Skill] | None = None

    def paths(self) -> list[str]:
        return [item[0] for item in self.signature]

    def size(self, path: str) -> int | None:
        return self.stats.get(path)

    def _read_now(self, path: str) -> bytes:
        full = (self.root / path).resolve()
        if not full.is_relative_to(self.root) or not full.is_file():
            raise ResourceNotFound(f"{self.root_uri}/{path}")
        return full.read_bytes()

    async def read(self, path: str) -> bytes:
        return await trio.to_thread.run_sync(self._read_now, path)

    async def entry(self) -> Skill:
        signature, _ = await trio.to_thread.run_sync(_scan, self.root)
        cached = self._entry
        if cached is not None and cached[0] == signature:
            return cached[1]

        def build() -> Skill:
            files = {path: self._read_now(path) for path, *_ in signature}
            frontmatter = parse_frontmatter(files[SKILL_FILE].decode("utf-8"), str(self.root / SKILL_FILE))
            return Skill(
                uri=self.uri,
                frontmatter=frontmatter,
                resources=[
                    SkillResource(uri=f"{self.root_uri}/{path}", digest=digest_of(data), size=len(data))
                    for path, data in files.items()
                ],
            )

        skill = await trio.to_thread.run_sync(build)
        self._entry = (signature, skill)
        return skill


class _RelayedSkill(SkillSource):
    """Another server's skill, passed on with its entry unchanged (``SkillSet.relay``)."""

    def __init__(self, entry: Skill) -> None:
        super().__init__(entry.name, "", entry.frontmatter)
        self.uri = entry.uri
        self.root_uri = entry.uri[: -len(SKILL_FILE) - 1]
        self._entry = entry

    def paths(self) -> list[str]:
        return []  # its files are served by whoever relays it

    async def entry(self) -> Skill:
        return self._entry


def _scan(root: Path, warn: bool = False) -> tuple[_Signature, dict[str, int]]:
    """Every file under ``root`` (``SKILL.md`` first, then sorted), each as (path, size, mtime, inode); a
    symlink is followed only while it stays inside ``root`` (and a folder reached twice is read once, so a
    symlink loop ends), and anything else under it is skipped (logged when ``warn``)."""
    found: list[tuple[str, int, int, int]] = []
    seen: set[Path] = set()
    for directory, subdirectories, names in os.walk(root, followlinks=True):
        here = Path(directory)
        real = here.resolve()
        if not real.is_relative_to(root) or real in seen:
            subdirectories.clear()
            continue
        seen.add(real)
        subdirectories[:] = [name for name in subdirectories if (here / name).resolve().is_relative_to(root)]
        for name in names:
            full = here / name
            try:
                if not full.resolve().is_relative_to(root):
                    if warn:
                        logger.warning("skill %s: %s points outside the skill folder; not served", root, full)
                    continue
                info = full.stat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found.append((full.relative_to(root).as_posix(), info.st_size, info.st_mtime_ns, info.st_ino))
        if len(found) > MAX_FILES or sum(item[1] for item in found) > MAX_TOTAL_BYTES:
            raise ValueError(f"the skill in {root} exceeds {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
    found.sort(key=lambda item: (item[0] != SKILL_FILE, item[0]))
    return tuple(found), {item[0]: item[1] for item in found}


def folder_skill(path: str | os.PathLike[str], *, prefix: str, poll_interval: float | None) -> SkillSource:
    """The skill in the folder ``path`` (which holds its ``SKILL.md``); see ``Server.add_skill_folder``."""
    if poll_interval is not None and not poll_interval > 0:
        raise ValueError(f"poll_interval must be a positive number of seconds, not {poll_interval!r}")
    root = Path(path).resolve()
    skill_md = root / SKILL_FILE
    if not skill_md.is_file():
        raise ValueError(f"{root} has no {SKILL_FILE}: a skill folder holds one at its root")
    frontmatter = parse_frontmatter(skill_md.read_text(encoding="utf-8"), str(skill_md))
    name = check_skill_name(frontmatter["name"], str(skill_md))
    if name != root.name:
        raise ValueError(f"{skill_md}: the skill name {name!r} must be its folder's name {root.name!r}")
    return _FolderSkill(root, name, _check_prefix(prefix), frontmatter, poll_interval)


def skill_folders(root: str | os.PathLike[str]) -> list[tuple[Path, str]]:
    """Every skill folder under ``root`` (one holding a ``SKILL.md``; folders inside a skill are its own, and
    hidden ones are skipped), each with its prefix: the path of its parent relative to ``root``."""
    base = Path(root).resolve()
    if not base.is_dir():
        raise ValueError(f"{base} is not a folder")
    found: list[tuple[Path, str]] = []

    def visit(folder: Path) -> None:
        for child in sorted(folder.iterdir()):
            if child.name.startswith(".") or not child.is_dir() or not child.resolve().is_relative_to(base):
                continue
            if (child / SKILL_FILE).is_file():
                found.append((child, folder.relative_to(base).as_posix().strip(".")))
            else:
                visit(child)

    visit(base)
    return found


def code_skill(skill_md: str, files: Mapping[str, str | bytes] | None, *, prefix: str) -> SkillSource:
    """A skill from its ``SKILL.md`` text and its other files (relative path -> content); see ``add_skill``."""
    if not isinstance(skill_md, str):
        raise TypeError(f"skill_md must be the text of SKILL.md, not {type(skill_md).__name__}")
    frontmatter = parse_frontmatter(skill_md, "skill_md")
    name = check_skill_name(frontmatter["name"], "skill_md")
    contents: dict[str, bytes] = {SKILL_FILE: skill_md.encode("utf-8")}
    for path, content in (files or {}).items():
        parts = path.split("/") if isinstance(path, str) else []
        if not parts or any(part in ("", ".", "..") for part in parts) or path == SKILL_FILE:
            raise ValueError(f"files: {path!r} must be a relative '/'-separated path inside the skill")
        if not isinstance(content, (str, bytes)):
            raise TypeError(f"files[{path!r}] must be str or bytes, not {type(content).__name__}")
        contents[path] = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    if len(contents) > MAX_FILES or sum(map(len, contents.values())) > MAX_TOTAL_BYTES:
        raise ValueError(f"the skill {name!r} exceeds {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
    return _CodeSkill(name, _check_prefix(prefix), frontmatter, contents)


class SkillSet:
    """The skills one server serves, the resources that carry their files, and the methods that list them."""

    def __init__(self, server: SkillHost) -> None:
        self.server = server
        self.sources: dict[str, SkillSource] = {}
        #: Set by ``relay()``: this server passes on another server's skills (the proxy), maybe none yet, and
        #: answers ``skills/get`` of a skill it did not list with ``fetch``.
        self.relaying = False
        self.fetch: Callable[[str], Awaitable[Skill]] | None = None

    @property
    def offered(self) -> bool:
        """Whether this server (or one mounted in it) serves skills, and so declares the extension."""
        return self.relaying or bool(self.sources) or any(mount.child.skills.offered for mount in self.server.mounts)

    def relay(self, entries: Sequence[Skill], fetch: Callable[[str], Awaitable[Skill]]) -> None:
        """Serve these entries of another server as they are (their files are that server's resources, which
        the caller serves), and ``skills/get`` of any other URI with ``fetch``; replaces what was relayed before."""
        self.relaying = True
        self.fetch = fetch
        self.enable()
        for uri in [uri for uri, source in self.sources.items() if isinstance(source, _RelayedSkill)]:
            del self.sources[uri]
        for entry in entries:
            if entry.uri not in self.sources:
                self.sources[entry.uri] = _RelayedSkill(entry)

    def declaration(self) -> dict[str, Any]:
        return {SKILLS_EXTENSION_ID: {"directoryRead": True}}

    def add(self, source: SkillSource) -> None:
        if source.uri in self.sources:
            raise ValueError(f"skills: {source.uri} is already registered")
        self.sources[source.uri] = source
        self.enable()
        self._register_files(source)

    def enable(self) -> None:
        """Serve the extension's methods (once)."""
        custom = self.server.custom
        if "skills/list" not in custom.requests:
            custom.add_request("skills/list", self._list)
            custom.add_request("skills/get", self._get)
            custom.add_request("resources/directory/read", self._read_directory)

    def _register_files(self, source: SkillSource) -> None:
        for path in source.paths():
            uri = f"{source.root_uri}/{path}"
            if uri in self.server.resources:
                self.server.remove_resource(uri)
            options: ResourceOptions = {"name": path, "mime_type": _mime_type(path), "size": source.size(path)}
            if path == SKILL_FILE:
                options["name"], options["description"] = source.name, source.frontmatter["description"]
            self.server.add_resource(_reader(source, path), uri, **options)

    def _unregister_files(self, source: SkillSource) -> None:
        for path in source.paths():
            uri = f"{source.root_uri}/{path}"
            if uri in self.server.resources:
                self.server.remove_resource(uri)

    # -- the methods ------------------------------------------------------------------------------

    async def all_entries(self) -> list[Skill]:
        """Every skill served, this server's first, then each mounted server's (URIs as the mount shows them)."""
        entries = [await source.entry() for source in self.sources.values()]
        for mount in self.server.mounts:
            for entry in await mount.child.skills.all_entries():
                renamed = mount.skill_entry(entry)
                if renamed is not None:
                    entries.append(renamed)
        return entries

    async def find(self, uri: str) -> Skill | None:
        source = self.sources.get(uri)
        if source is not None:
            return await source.entry()
        return next((entry for entry in await self.all_entries() if entry.uri == uri), None)

    async def _list(self, params: dict[str, Any] | None, ctx: object) -> dict[str, Any]:
        items = [skill_to_wire(entry) for entry in await self.all_entries()]
        return self._page("skills", items, params, "skills/list")

    def _page(self, key: str, items: list[dict[str, Any]], params: dict[str, Any] | None, scope: str) -> dict[str, Any]:
        size = self.server.page_size or max(len(items), 1)
        return page_result(
            key, items, (params or {}).get("cursor"), page_size=size, scope=scope, codec=self.server.cursors
        )

    async def _get(self, params: dict[str, Any] | None, ctx: object) -> dict[str, Any]:
        uri = (params or {}).get("uri")
        if not isinstance(uri, str):
            raise McpError(INVALID_PARAMS, "Invalid params: skills/get needs the uri of a SKILL.md")
        entry = await self.find(uri)
        if entry is None and self.fetch is not None:
            entry = await self.fetch(uri)  # the other server's answer, its -32602 included
        if entry is None:
            raise McpError(INVALID_PARAMS, f"Invalid params: no skill is served at {uri}", {"uri": uri})
        return {"skill": skill_to_wire(entry)}

    async def _read_directory(self, params: dict[str, Any] | None, ctx: object) -> dict[str, Any]:
        uri = (params or {}).get("uri")
        if not isinstance(uri, str):
            raise McpError(INVALID_PARAMS, "Invalid params: resources/directory/read needs the uri of a directory")
        children = self._children(uri.rstrip("/"))  # written without a trailing slash; tolerated with one
        if children is None:
            raise McpError(INVALID_PARAMS, f"Invalid params: {uri} is not a directory resource", {"uri": uri})
        return self._page("resources", children, params, "resources/directory/read")

    def _children(self, directory: str) -> list[dict[str, Any]] | None:
        """The direct children of the directory resource ``directory`` (None: it is not one), from the resources
        under it; directories appear as ``inode/directory`` resources."""
        below = directory + "/"
        files: dict[str, dict[str, Any]] = {}
        directories: set[str] = set()
        is_directory = False
        roots = tuple(self.roots())
        for uri, definition in self.server.resources.items():
            if not uri.startswith(below) or not uri.startswith(roots):
                continue
            is_directory = True
            rest = uri[len(below) :]
            head, _, tail = rest.partition("/")
            if tail:
                directories.add(head)
            else:
                files[uri] = definition.wire(MODERN_VERSIONS[-1])
        if not is_directory:
            return None
        listed = [{"uri": below + name, "name": name, "mimeType": DIRECTORY_MIME_TYPE} for name in sorted(directories)]
        return listed + [files[uri] for uri in sorted(files)]

    def roots(self) -> list[str]:
        """The root directory of every skill served, with a trailing ``/``."""
        roots = [source.root_uri + "/" for source in self.sources.values()]
        for mount in self.server.mounts:
            roots += [root for root in map(mount.uri, mount.child.skills.roots()) if root]
        return roots

    # -- watching ---------------------------------------------------------------------------------

    @asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        """Poll each watched folder while the server runs (``Server.running()``)."""
        watched = [s for s in self.sources.values() if isinstance(s, _FolderSkill) and s.poll_interval is not None]
        if not watched:
            yield
            return
        async with trio.open_nursery() as nursery:
            for source in watched:
                nursery.start_soon(self._poll, source)
            try:
                yield
            finally:
                nursery.cancel_scope.cancel()

    async def _poll(self, source: _FolderSkill) -> None:
        assert source.poll_interval is not None
        while True:
            await trio.sleep(source.poll_interval)
            try:
                signature, stats = await trio.to_thread.run_sync(_scan, source.root)
                if signature == source.signature:
                    continue
                text = await trio.to_thread.run_sync((source.root / SKILL_FILE).read_text, "utf-8")
                frontmatter = parse_frontmatter(text, str(source.root / SKILL_FILE))
            except (OSError, ValueError) as exc:
                logger.warning("skill %s: its folder cannot be read (%s); served as it was", source.uri, exc)
                continue
            if frontmatter.get("name") != source.name:
                logger.warning("skill %s: SKILL.md now names %r; served as it was", source.uri, frontmatter["name"])
                continue
            self._unregister_files(source)
            source.signature, source.stats, source.frontmatter = signature, stats, frontmatter
            self._register_files(source)
            logger.info("skill %s changed on disk", source.uri)


def _reader(source: SkillSource, path: str) -> Any:
    """The resource handler of one skill file: its bytes read when asked, as text when they are UTF-8."""

    async def read() -> str | bytes:
        data = await source.read(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data

    return read
