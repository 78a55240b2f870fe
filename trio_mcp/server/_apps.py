"""Serving MCP Apps (``io.modelcontextprotocol/ui``): a ``ui://`` HTML resource bound to the tools it renders.

``Server.add_app(uri, html, tools=[...])`` registers the resource (``text/html;profile=mcp-app``, its ``_meta.ui``
from the CSP, permissions, domain and border given) and stamps ``_meta.ui.resourceUri`` on each tool named. Only a
client that declared the extension (with that MIME type) sees them: for any other the tools are listed without
``_meta.ui`` and the app resources are not listed, so it sees plain tools whose results must stand on their own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..apps import APP_MIME_TYPE, APPS_EXTENSION_ID, AppCsp, AppPermissions, supports_apps
from ..types import ClientCapabilities, TextResourceContents
from ._resources import ResourceDefinition, ResourceOptions
from ._tools import ToolDefinition

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AppSet"]


class AppHost(Protocol):
    """What an ``AppSet`` needs of its server (``ServerCore``)."""

    tools: dict[str, ToolDefinition]

    @property
    def mounts(self) -> Sequence[Any]:
        """Each ``Mounted`` server: ``.child.apps``, ``.uri(uri)``."""

    def add_resource(
        self, fn: Callable[..., Any], uri: str, **options: Unpack[ResourceOptions]
    ) -> ResourceDefinition: ...

    def notify_list_changed(self, kind: str) -> None: ...


class AppSet:
    """The apps one server serves: their resource URIs, and the tools bound to each."""

    def __init__(self, server: AppHost) -> None:
        self.server = server
        self.uris: set[str] = set()

    def add(
        self,
        uri: str,
        html: str,
        *,
        tools: Sequence[str],
        name: str | None,
        title: str | None,
        description: str | None,
        csp: AppCsp | None,
        permissions: AppPermissions | None,
        domain: str | None,
        prefers_border: bool | None,
        visibility: Sequence[str] | None,
    ) -> None:
        if not isinstance(uri, str) or not uri.startswith("ui://") or len(uri) <= len("ui://"):
            raise ValueError(f"an app's URI must use the ui:// scheme, not {uri!r}")
        if not isinstance(html, str):
            raise TypeError(f"html must be the app's HTML document as a str, not {type(html).__name__}")
        if isinstance(tools, str):
            raise TypeError("tools must be a list of tool names, not one str")
        missing = [tool for tool in tools if tool not in self.server.tools]
        if missing:
            raise ValueError(f"add_app({uri!r}): no tool named {', '.join(map(repr, missing))} is registered yet")
        if visibility is not None and (not visibility or any(v not in ("model", "app") for v in visibility)):
            raise ValueError(f"visibility must name 'model' and/or 'app', not {visibility!r}")
        ui: dict[str, Any] = {}
        if csp is not None and csp.wire():
            ui["csp"] = csp.wire()
        if permissions is not None and permissions.wire():
            ui["permissions"] = permissions.wire()
        if domain is not None:
            ui["domain"] = domain
        if prefers_border is not None:
            ui["prefersBorder"] = prefers_border

        contents = TextResourceContents(uri=uri, mime_type=APP_MIME_TYPE, text=html, meta={"ui": ui} if ui else None)

        async def read() -> TextResourceContents:
            return contents  # _meta.ui in the read too: a host reads it there

        self.server.add_resource(
            read,
            uri,
            name=name or uri[len("ui://") :],
            title=title,
            description=description,
            mime_type=APP_MIME_TYPE,
            meta={"ui": ui} if ui else None,
        )
        self.uris.add(uri)
        link: dict[str, Any] = {"resourceUri": uri}
        if visibility is not None:
            link["visibility"] = list(visibility)
        for tool in tools:
            definition = self.server.tools[tool]
            self.server.tools[tool] = attrs.evolve(definition, meta={**(definition.meta or {}), "ui": link})
        if tools:
            self.server.notify_list_changed("tools")

    @property
    def offered(self) -> bool:
        """Whether this server (or one mounted in it) serves apps, and so declares the extension."""
        return bool(self.uris) or any(mount.child.apps.offered for mount in self.server.mounts)

    def all_uris(self) -> set[str]:
        """The URIs of every app served, those of mounted servers as the mount shows them."""
        uris = set(self.uris)
        for mount in self.server.mounts:
            uris.update(uri for uri in map(mount.uri, mount.child.apps.all_uris()) if uri is not None)
        return uris

    def declaration(self) -> dict[str, Any]:
        return {APPS_EXTENSION_ID: {}}

    def visible(self, method: str, items: list[dict[str, Any]], capabilities: ClientCapabilities) -> list[Any]:
        """``items`` of a listing as a client with ``capabilities`` sees them (see the module's docstring)."""
        if not self.offered or supports_apps(capabilities):
            return items
        if method == "resources/list":
            uris = self.all_uris()
            return [item for item in items if item.get("uri") not in uris]
        if method == "tools/list":
            return [_without_ui(item) if "ui" in (item.get("_meta") or {}) else item for item in items]
        return items


def _without_ui(tool: dict[str, Any]) -> dict[str, Any]:
    meta = {key: value for key, value in tool["_meta"].items() if key != "ui"}
    stripped = {key: value for key, value in tool.items() if key != "_meta"}
    return {**stripped, "_meta": meta} if meta else stripped
