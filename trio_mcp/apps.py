"""MCP Apps (``io.modelcontextprotocol/ui``): a tool names a ``ui://`` resource, an HTML document served as
``text/html;profile=mcp-app`` that a host renders in a sandboxed frame; these are what both sides read and write.

Wire shapes (ext-apps): a tool's ``_meta.ui`` is ``{resourceUri, visibility?}``; the resource's ``_meta.ui`` is
``{csp?: {connectDomains, resourceDomains, frameDomains, baseUriDomains}, permissions?: {camera, microphone,
geolocation, clipboardWrite} (each an empty object when asked for), domain?, prefersBorder?}``; a client that can
render apps declares ``extensions["io.modelcontextprotocol/ui"] = {"mimeTypes": ["text/html;profile=mcp-app"]}``.
"""

from typing import Any, Final, Literal

import attrs

from .types.lifecycle import ClientCapabilities

__all__ = [
    "APPS_EXTENSION_ID",
    "APP_MIME_TYPE",
    "AppCsp",
    "AppPermissions",
    "AppLink",
    "AppResource",
    "apps_capability",
    "supports_apps",
]

APPS_EXTENSION_ID: Final = "io.modelcontextprotocol/ui"
APP_MIME_TYPE: Final = "text/html;profile=mcp-app"

AppVisibility = Literal["model", "app"]

_CSP_KEYS: Final = {
    "connect_domains": "connectDomains",
    "resource_domains": "resourceDomains",
    "frame_domains": "frameDomains",
    "base_uri_domains": "baseUriDomains",
}
_PERMISSION_KEYS: Final = {
    "camera": "camera",
    "microphone": "microphone",
    "geolocation": "geolocation",
    "clipboard_write": "clipboardWrite",
}


def apps_capability() -> dict[str, dict[str, Any]]:
    """The ``extensions`` entry a client that renders apps declares: ``Client(extensions=apps_capability())``."""
    return {APPS_EXTENSION_ID: {"mimeTypes": [APP_MIME_TYPE]}}


def supports_apps(capabilities: ClientCapabilities) -> bool:
    """Whether a client declared the extension with the ``text/html;profile=mcp-app`` MIME type (a tool may say
    less in its text when the app will show the rest: ``supports_apps(ctx.client_capabilities)``)."""
    settings = (capabilities.extensions or {}).get(APPS_EXTENSION_ID)
    mime_types = settings.get("mimeTypes") if isinstance(settings, dict) else None
    return isinstance(mime_types, list) and APP_MIME_TYPE in mime_types


@attrs.frozen(kw_only=True)
class AppCsp:
    """The origins an app's frame may reach, beyond its own HTML (the host builds its Content-Security-Policy)."""

    connect_domains: tuple[str, ...] = ()  #: fetch, XHR, WebSocket
    resource_domains: tuple[str, ...] = ()  #: scripts, styles, images, fonts, media
    frame_domains: tuple[str, ...] = ()  #: nested frames
    base_uri_domains: tuple[str, ...] = ()  #: ``<base href>``

    def wire(self) -> dict[str, list[str]]:
        return {key: list(getattr(self, name)) for name, key in _CSP_KEYS.items() if getattr(self, name)}

    @classmethod
    def from_wire(cls, data: object) -> "AppCsp":
        data = data if isinstance(data, dict) else {}
        return cls(**{name: _strings(data.get(key)) for name, key in _CSP_KEYS.items()})


@attrs.frozen(kw_only=True)
class AppPermissions:
    """The browser permissions an app's frame asks the host for."""

    camera: bool = False
    microphone: bool = False
    geolocation: bool = False
    clipboard_write: bool = False

    def wire(self) -> dict[str, dict[str, Any]]:
        return {key: {} for name, key in _PERMISSION_KEYS.items() if getattr(self, name)}

    @classmethod
    def from_wire(cls, data: object) -> "AppPermissions":
        data = data if isinstance(data, dict) else {}
        return cls(**{name: isinstance(data.get(key), dict) for name, key in _PERMISSION_KEYS.items()})


@attrs.frozen(kw_only=True)
class AppLink:
    """What a tool's ``_meta.ui`` says: the ``ui://`` resource that renders it, and who may call the tool
    (``("model", "app")`` when the server does not say)."""

    resource_uri: str
    visibility: tuple[str, ...] = ("model", "app")


@attrs.frozen(kw_only=True)
class AppResource:
    """An app, read: its HTML and what its ``_meta.ui`` asks of the host's frame."""

    uri: str
    html: str
    csp: AppCsp = AppCsp()
    permissions: AppPermissions = AppPermissions()
    domain: str | None = None
    prefers_border: bool | None = None


def _strings(value: object) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()
