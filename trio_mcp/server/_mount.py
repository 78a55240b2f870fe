"""Composition: ``parent.mount(prefix, child)`` serves another ``Server``'s tools, prompts and resources as its own.

Tools and prompts appear as ``<prefix><separator><name>``; resources and templates keep their URIs (a URI is
already a global name) unless the mount prefixes them (``scheme://rest`` becomes ``scheme://<prefix>/rest``, the
form FastMCP uses, so the URI stays valid and its scheme keeps its meaning). The child stays a live registry:
whatever it adds or removes later shows up in the parent, whose clients get the ``list_changed`` notifications,
and its ``notify_resource_updated()`` reaches the parent's subscribers. The child's lifespan runs inside the parent's (``Server.running()``), and its handlers see a
``Context`` whose ``server`` and ``lifespan_state`` are the child's own, so a server behaves the same mounted or not.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from typing import Any, Final

import attrs

from .._uri_template import UriTemplate
from ..skills import Skill
from ..types import PromptReference, ResourceTemplateReference
from ._context import Context
from ._prompts import PromptDefinition
from ._registry import CompletionHandler, ServerCore
from ._resources import ResourceDefinition
from ._tools import ToolDefinition
from ._transform import Transform

__all__ = ["Mount"]

logger = logging.getLogger("trio_mcp.server")

_PREFIX: Final = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


def _rebind(
    fn: Callable[..., Any], is_async: bool, injected: tuple[str, ...], server: ServerCore
) -> Callable[..., Any]:
    """``fn`` with each injected ``Context`` argument replaced by the mounted server's view of it."""
    if not injected:
        return fn

    def rewrite(kwargs: dict[str, Any]) -> dict[str, Any]:
        for name in injected:
            if isinstance(kwargs.get(name), Context):
                kwargs[name] = kwargs[name].with_server(server)
        return kwargs

    if is_async:

        @functools.wraps(fn)
        async def call_async(**kwargs: Any) -> Any:
            return await fn(**rewrite(kwargs))

        return call_async

    @functools.wraps(fn)
    def call(**kwargs: Any) -> Any:
        return fn(**rewrite(kwargs))

    return call


class Mount:
    """One child mounted in one parent under one prefix; keeps the parent's copies in step with the child."""

    def __init__(
        self,
        parent: ServerCore,
        prefix: str,
        child: ServerCore,
        separator: str,
        *,
        prefix_uris: bool,
        transform: Transform | None = None,
    ) -> None:
        if not _PREFIX.match(prefix):
            raise ValueError(f"mount prefix {prefix!r} must be 1-64 letters, digits, '_' or '-'")
        if not separator or not re.fullmatch(r"[A-Za-z0-9_.\-/]+", separator):
            raise ValueError("separator must be non-empty and use only letters, digits, '_', '.', '-' or '/'")
        if child is parent or _mounts(child, parent):
            raise ValueError(f"mounting {child.info.name!r} under {parent.info.name!r} would make a cycle")
        self.parent = parent
        self.prefix = prefix
        self.child = child
        self.separator = separator
        self.prefix_uris = prefix_uris
        self.transform = transform if transform is not None else Transform()
        #: The parent's URI (or URI template) of each mounted resource -> the child's.
        self.child_uris: dict[str, str] = {}
        #: The keys this mount added to each of the parent's tables.
        self.added: dict[str, list[str]] = {"tools": [], "prompts": []}

    def name(self, name: str) -> str:
        return f"{self.prefix}{self.separator}{name}"

    def uri(self, uri: str) -> str | None:
        """The parent's URI for the child's ``uri`` (or template); None if it has no ``scheme://`` to prefix after."""
        if not self.prefix_uris:
            return uri
        scheme, found, rest = uri.partition("://")
        return f"{scheme}://{self.prefix}/{rest}" if found and scheme and "{" not in scheme else None

    def attach(self) -> None:
        """Copy everything in; a name the parent already has is an error here (later, a logged skip)."""
        unknown = set(self.transform.tools) - set(self.child.tools)
        if unknown:
            raise ValueError(f"the transform names tools {self.child.info.name!r} does not have: {sorted(unknown)}")
        clashes = [key for key, _ in self._tools() if key in self.parent.tools]
        clashes += [self.name(n) for n in self.child.prompts if self.name(n) in self.parent.prompts]
        uris = {uri: self.uri(uri) for uri in (*self.child.resources, *self.child.templates)}
        unprefixable = [uri for uri, mounted in uris.items() if mounted is None]
        if unprefixable:
            raise ValueError(
                f"cannot prefix the URIs of {self.child.info.name!r}: "
                + ", ".join(repr(uri) for uri in unprefixable)
                + " have no scheme:// to put the prefix after"
            )
        clashes += [
            mounted
            for mounted in uris.values()
            if mounted is not None and (mounted in self.parent.resources or mounted in self.parent.templates)
        ]
        if clashes:
            raise ValueError(
                f"cannot mount {self.child.info.name!r} as {self.prefix!r}: the parent already has "
                + ", ".join(repr(c) for c in clashes)
            )
        for kind in ("tools", "prompts", "resources"):
            self.list_changed(kind)

    # -- events from the child --------------------------------------------------------------------

    def list_changed(self, kind: str) -> None:
        """The child's ``kind`` listing changed: bring the parent's copies up to date (it notifies its clients)."""
        if kind == "tools":
            self._sync_named(self.parent.tools, self._tools(), "tools")
        elif kind == "prompts":
            entries = [
                (self.name(name), self._copy(prompt, name=self.name(name)))
                for name, prompt in self.child.prompts.items()
            ]
            self._sync_named(self.parent.prompts, entries, "prompts")
        elif kind == "resources":
            self._sync_resources()

    def completer(self, ref: PromptReference | ResourceTemplateReference) -> tuple[CompletionHandler, Any] | None:
        """The child's completion handler for ``ref`` (renamed as the child knows it), if it is the child's."""
        if isinstance(ref, PromptReference):
            if ref.name not in self.added["prompts"]:
                return None
            return self.child.completer(attrs.evolve(ref, name=ref.name[len(self.name("")) :]))
        child_uri = self.child_uris.get(ref.uri)
        if child_uri is None:
            return None
        return self.child.completer(attrs.evolve(ref, uri=child_uri))

    def skill_entry(self, skill: Skill) -> Skill | None:
        """The child's skill entry with the URIs the parent serves its files at (None: they cannot be prefixed)."""
        uri = self.uri(skill.uri)
        if uri is None:
            return None
        if skill.resources == "dynamic":
            return attrs.evolve(skill, uri=uri)
        files = [attrs.evolve(item, uri=self.uri(item.uri) or item.uri) for item in skill.resources]
        return attrs.evolve(skill, uri=uri, resources=files)

    def resource_updated(self, uri: str) -> None:
        mounted = self.uri(uri)
        if mounted is not None and (mounted in self.child_uris or self.parent.find_resource(mounted) is not None):
            self.parent.notify_resource_updated(mounted)

    # -- copying ----------------------------------------------------------------------------------

    def _tools(self) -> list[tuple[str, ToolDefinition]]:
        """The child's tools as the parent shows them (the transform applied), each under its key there."""
        entries = []
        for name, tool in self.child.tools.items():
            if self.transform.hides(tool):
                continue
            change = self.transform.tools.get(name)
            key = self.name(change.name if change is not None and change.name is not None else name)
            entries.append((key, self.transform.apply(self._copy(tool, **self._app_link(tool)), key, change)))
        return entries

    def _sync_named(self, table: dict[str, Any], entries: list[tuple[str, Any]], kind: str) -> None:
        for key in self.added[kind]:
            table.pop(key, None)
        self.added[kind] = []
        for key, definition in entries:
            if key in table:
                logger.warning("mount %r: %s %r is already in the parent; not mounted", self.prefix, kind, key)
                continue
            table[key] = definition
            self.added[kind].append(key)
        self.parent._changed(kind)

    def _sync_resources(self) -> None:
        for mounted in self.child_uris:
            if mounted in self.parent.resources or mounted in self.parent.templates:
                self.parent.remove_resource(mounted)
        self.child_uris = {}
        for child_uri, definition in (*self.child.resources.items(), *self.child.templates.items()):
            uri = self.uri(child_uri)
            if uri is None or uri in self.parent.resources or uri in self.parent.templates:
                why = "is already in the parent" if uri is not None else "has no scheme:// to prefix after"
                logger.warning("mount %r: resource %r %s; not mounted", self.prefix, child_uri, why)
                continue
            if definition.template is None:
                self.parent._add(self.parent.resources, self._copy(definition, uri=uri), "resources", key=uri)
            else:
                copy = self._copy(definition, uri=uri, template=UriTemplate(uri))
                self.parent._add(self.parent.templates, copy, "resources", key=uri)
                self.parent._router.add(uri, copy.template)
            self.child_uris[uri] = child_uri
        if self.child.skills.offered:
            self.parent.skills.enable()
        self.parent._changed("resources")

    def _app_link(self, tool: ToolDefinition) -> dict[str, Any]:
        """The changes that give a tool's ``_meta.ui.resourceUri`` (MCP Apps) the URI the parent serves it at."""
        ui = (tool.meta or {}).get("ui")
        uri = ui.get("resourceUri") if isinstance(ui, dict) else None
        mounted = self.uri(uri) if isinstance(uri, str) else None
        if tool.meta is None or not isinstance(ui, dict) or mounted is None or mounted == uri:
            return {}
        return {"meta": {**tool.meta, "ui": {**ui, "resourceUri": mounted}}}

    def _copy(self, definition: Any, **changes: Any) -> Any:
        assert isinstance(definition, (ToolDefinition, PromptDefinition, ResourceDefinition))
        fn = _rebind(definition.fn, definition.is_async, definition.schema.skipped, self.child)
        return attrs.evolve(definition, fn=fn, **changes)


def _mounts(server: ServerCore, target: ServerCore) -> bool:
    """True when ``target`` is mounted in ``server``, directly or deeper down."""
    return any(mount.child is target or _mounts(mount.child, target) for mount in server.mounts)
