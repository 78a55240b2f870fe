"""``ServerCore``: what a server offers and its lifespan, independent of any one connection or transport.

It sits below the connection, the ``Context``, tasks and mounts, which type the server with it; ``Server``
(``_server.py``) adds the ways to serve it and ``mount()``.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import attrs

from .._core.tasks import TaskRecord
from .._custom import CustomMethods
from .._deadline import declare as declare_deadlines
from .._middleware import Middleware, require_async
from .._pagination import CursorCodec
from .._uri_template import MatchedVariables, TemplateRouter
from .._wire.convert import to_wire
from .._wire.features import Feature, has, project
from .._wire.methods import METHODS
from .._wire.versions import LEGACY_VERSIONS, MODERN_VERSIONS, V2025_11_25
from ..apps import AppCsp, AppPermissions
from ..auth._scopes import ScopeTable
from ..skills import Skill
from ..types import (
    META_SERVER_INFO,
    RESULT_COMPLETE,
    Annotations,
    Icon,
    Implementation,
    PromptReference,
    PromptsCapability,
    ResourcesCapability,
    ResourceTemplateReference,
    Root,
    ServerCapabilities,
    ToolAnnotations,
    ToolExecution,
    ToolsCapability,
)
from ._apps import AppSet
from ._blocking import Watch
from ._modern import StateSigner
from ._prompts import PromptDefinition, PromptOptions, make_prompt
from ._resources import ResourceDefinition, ResourceOptions, make_resource
from ._skills import SkillSet, code_skill, folder_skill, skill_folders
from ._tasks import TaskManager, Work, task_capabilities
from ._tools import ToolDefinition, ToolOptions, make_tool

if TYPE_CHECKING:
    from typing_extensions import Self, Unpack

__all__ = ["CompletionHandler", "Listener", "Mounted", "ServerCore"]

#: 2026-07-28 results that carry ``ttlMs``/``cacheScope``: the method table's, and the skills extension's.
_CACHEABLE_METHODS = frozenset(method for method, spec in METHODS.items() if spec.cache_hint_revisions) | {
    "skills/list",
    "skills/get",
}

F = TypeVar("F", bound=Callable[..., Any])
D = TypeVar("D", ToolDefinition, ResourceDefinition, PromptDefinition)
M = TypeVar("M", bound=Middleware)

CompletionHandler = Callable[..., Any]
"""``(ref, argument, context) -> list[str] | Completion | None``, sync or async; see ``Server.completion``."""


def _refuse_bare(decorator: str, first: object, written: str) -> None:
    """``@server.tool`` without its call would pass the function as the first option and register nothing (the
    function is replaced by the inner decorator); refuse it where it is written."""
    if callable(first):
        name = getattr(first, "__name__", "the function")
        raise TypeError(f"@server.{decorator} needs its call: write @server.{written} above def {name}")


class Listener(Protocol):
    """What hears of changes to the registry: each client connection, and each mount of it in another server."""

    def list_changed(self, kind: str) -> None: ...

    def resource_updated(self, uri: str) -> None: ...


class Mounted(Protocol):
    """A server mounted in this one (``_mount.Mount``): it completes its own references, and its lifespan and
    roots handlers are part of this server's."""

    @property
    def child(self) -> ServerCore: ...

    def completer(self, ref: PromptReference | ResourceTemplateReference) -> tuple[CompletionHandler, Any] | None: ...

    def uri(self, uri: str) -> str | None: ...

    def skill_entry(self, skill: Skill) -> Skill | None: ...


class ServerCore:
    """The registry of a server (tools, resources, prompts, handlers, middleware) and its lifespan; users
    build a ``Server``, which adds the ways to serve it."""

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        description: str | None = None,
        instructions: str | None = None,
        website_url: str | None = None,
        icons: Sequence[Icon] | None = None,
        lifespan: Callable[[Self], AbstractAsyncContextManager[Any]] | None = None,
        page_size: int | None = None,
        max_in_flight: int = 256,
        peer_cancel_mode: Literal["interrupt", "signal"] = "interrupt",
        default_log_level: str = "info",
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "public",
        request_state_secret: bytes | None = None,
        request_state_ttl: float = 600.0,
        tasks: TaskManager | None = None,
        expose_errors: bool = False,
        blocking_warning: float | None = 0.5,
    ) -> None:
        """Args:
        name, version, title, description, website_url, icons: the ``serverInfo`` clients see.
        instructions: usage hints for the model, sent in the ``initialize`` result.
        lifespan: an ``@asynccontextmanager`` taking the server, run once around the whole server (see
            ``running()``); what it yields is ``Context.lifespan_state``.
        page_size: items per page of every ``*/list`` result (None: everything in one page).
        max_in_flight: requests served at once per connection; more are refused with -32010 (SERVER_BUSY).
        peer_cancel_mode: "interrupt" cancels a handler's scope on ``notifications/cancelled``; "signal"
            only sets ``ctx.cancel_requested`` and lets the handler finish (no response is sent either way).
        default_log_level: the level below which ``ctx.log()`` sends nothing until the client sets one.
        cache_ttl_ms, cache_scope: the caching hints on 2026-07-28 discover, list and read results.
        request_state_secret: the HMAC key for 2026-07-28 ``requestState``; None derives it from the
            ``TRIO_MCP_SECRET_KEY`` environment variable, or picks one per process when that is unset (give
            every replica the same key when a retry may reach another one).
        request_state_ttl: seconds a client has to answer an ``InputRequiredResult``.
        tasks: runs tools as tasks (store, TTLs, limits); a default ``TaskManager`` when None.
        expose_errors: send the text and traceback of a handler's unexpected exception to the client (for
            development only: they may hold paths, queries or secrets). By default the client is told that the
            handler failed and a correlation id; the log record with the traceback carries the same id.
        blocking_warning: seconds one step of a handler (from one yielding ``await`` to the next) may hold the
            event loop before a warning names it: a blocking call in an async handler stalls every request.
            None turns the warning off.
        """
        if not isinstance(expose_errors, bool):
            raise TypeError(f"expose_errors must be True or False, not {expose_errors!r}")
        if blocking_warning is not None and not (
            isinstance(blocking_warning, (int, float))
            and not isinstance(blocking_warning, bool)
            and blocking_warning > 0
        ):
            raise ValueError(f"blocking_warning must be a number of seconds above 0, or None, not {blocking_warning!r}")
        if page_size is not None and page_size < 1:
            raise ValueError("page_size must be at least 1")
        self.info = Implementation(
            name=name,
            version=version,
            title=title,
            description=description,
            website_url=website_url,
            icons=list(icons) if icons else None,
        )
        self.instructions = instructions
        self.expose_errors = expose_errors
        self.blocking_warning = blocking_warning
        self.max_in_flight = max_in_flight
        self.peer_cancel_mode = peer_cancel_mode
        self.default_log_level = default_log_level
        self.page_size = page_size
        self.cursors = CursorCodec()
        self.request_states = StateSigner(request_state_secret, ttl=request_state_ttl)
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.tools: dict[str, ToolDefinition] = {}
        #: The scopes each tool, resource and prompt needs (``scopes=`` of the decorators).
        self.scopes = ScopeTable()
        self.resources: dict[str, ResourceDefinition] = {}
        self.templates: dict[str, ResourceDefinition] = {}
        self.prompts: dict[str, PromptDefinition] = {}
        self.completion_handler: CompletionHandler | None = None
        self.roots_changed_handler: Callable[[list[Root]], Any] | None = None
        self.lifespan_state: Any = None
        self._lifespan = lifespan
        self._running = False
        self._router: TemplateRouter[str] = TemplateRouter()
        self._listing_cache: dict[tuple[str, str], list[dict[str, Any]]] = {}
        #: The connections open to this server's clients.
        self.connections: set[Listener] = set()
        self.tasks = tasks if tasks is not None else TaskManager()
        #: Spreads what ``notify_resource_updated`` and ``notify_list_changed`` announce to the other processes
        #: serving the same clients, around the local notification (a running ``trio_mcp.scale.RedisFanout``
        #: sets it); None: the clients of this process only.
        self.fan_out: Callable[[str, str], AbstractContextManager[None]] | None = None
        #: Servers mounted in this one (``Server.mount()``).
        self.mounts: list[Mounted] = []
        #: Told of every change besides the connections: the mounts this server is the child of, caches (``watch()``).
        self._watchers: list[Listener] = []
        #: The middleware around every inbound request and notification, outermost first (``middleware()``).
        self.middleware_chain: tuple[Middleware, ...] = ()
        #: The middleware around every request a handler sends the client (``outbound_middleware()``).
        self.outbound_chain: tuple[Middleware, ...] = ()
        #: Custom request and notification methods, and the extensions declared (``request_handler()``, ...).
        self.custom = CustomMethods()
        #: The skills served (``add_skill()``, ``add_skill_folder()``), and the methods of the skills extension.
        self.skills = SkillSet(self)
        #: The MCP Apps served (``add_app()``): ``ui://`` resources and the tools bound to them.
        self.apps = AppSet(self)

    # -- tools ------------------------------------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, Any] | None = None,
        icons: Sequence[Icon] | None = None,
        execution: ToolExecution | None = None,
        input_schema: Mapping[str, Any] | None = None,
        structured_output: bool | None = None,
        meta: Mapping[str, Any] | None = None,
        run_in_thread: bool = True,
        task_support: Literal["forbidden", "optional", "required"] | None = None,
        defer_task: bool = False,
        retry_on_loss: int = 0,
        scopes: Sequence[str] = (),
    ) -> Callable[[F], F]:
        """Register the decorated function as a tool.

        The input schema comes from the type hints (``Annotated[T, Field(description=...)]`` documents an
        argument) unless ``input_schema`` is given, which is then sent verbatim; the description defaults
        to the docstring; a return annotation with a schema makes the result structured. A parameter
        annotated ``Context`` receives the request context. Sync functions run in a worker thread unless
        ``run_in_thread=False``. ``task_support`` says whether a call may run as a task (see ``TaskManager``,
        docs/tasks.md); with ``defer_task`` the handler becomes one only when it calls ``ctx.start_task()``.
        ``retry_on_loss=N``: a task of this tool whose process dies is run again from the start by another
        process sharing the task store, at most N times (its arguments are kept in the store for that).
        ``scopes`` are the OAuth scopes a caller needs (``trio_mcp.auth``): others do not see the tool listed,
        and calling it gets the step-up challenge (the same holds for resources and prompts).
        """
        options: ToolOptions = {
            "name": name,
            "title": title,
            "description": description,
            "annotations": annotations,
            "icons": icons,
            "execution": execution,
            "input_schema": input_schema,
            "structured_output": structured_output,
            "meta": meta,
            "run_in_thread": run_in_thread,
            "task_support": task_support,
            "defer_task": defer_task,
            "retry_on_loss": retry_on_loss,
        }

        _refuse_bare("tool", name, "tool()")
        ScopeTable.checked(scopes)  # refused at the decorator, before anything is registered

        def register(fn: F) -> F:
            self.scopes.require("tools", self.add_tool(fn, **options).name, scopes)
            return fn

        return register

    def add_tool(self, fn: Callable[..., Any], **options: Unpack[ToolOptions]) -> ToolDefinition:
        """Register ``fn`` as a tool (the non-decorator form of ``tool()``); returns its definition."""
        return self._add(self.tools, self._watched(make_tool(fn, **options), "tool"), "tools")

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; raises ``KeyError`` if there is none by that name."""
        del self.tools[name]
        self._changed("tools")

    # -- resources --------------------------------------------------------------------------------

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: Annotations | Mapping[str, Any] | None = None,
        size: int | None = None,
        icons: Sequence[Icon] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
    ) -> Callable[[F], F]:
        """Register the decorated function as the resource at ``uri``.

        A URI with RFC 6570 variables (``"users://{id}/profile"``) registers a template: the variables are
        passed to the function's parameters of the same names, converted to their annotated types. The
        function returns ``str`` (text), ``bytes`` (a blob), resource contents, or JSON-able data.
        """
        options: ResourceOptions = {
            "name": name,
            "title": title,
            "description": description,
            "mime_type": mime_type,
            "annotations": annotations,
            "size": size,
            "icons": icons,
            "meta": meta,
        }

        _refuse_bare("resource", uri, 'resource("scheme://...")')
        ScopeTable.checked(scopes)  # refused at the decorator, before anything is registered

        def register(fn: F) -> F:
            self.add_resource(fn, uri, **options)
            self.scopes.require("resources", uri, scopes)
            return fn

        return register

    def add_resource(self, fn: Callable[..., Any], uri: str, **options: Unpack[ResourceOptions]) -> ResourceDefinition:
        """Register ``fn`` as the resource (or template) at ``uri``; the non-decorator form of ``resource()``."""
        definition = self._watched(make_resource(fn, uri, **options), "resource")
        if definition.template is None:
            return self._add(self.resources, definition, "resources", key=uri)
        self._add(self.templates, definition, "resources", key=uri)
        self._router.add(uri, definition.template)
        return definition

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template by its URI; raises ``KeyError`` if there is none."""
        if uri in self.resources:
            del self.resources[uri]
        else:
            del self.templates[uri]
            self._router = TemplateRouter()
            for key, definition in self.templates.items():
                assert definition.template is not None
                self._router.add(key, definition.template)
        self._changed("resources")

    def find_resource(self, uri: str) -> tuple[ResourceDefinition, MatchedVariables] | None:
        """The resource serving ``uri``: an exact static match first, then templates in registration order."""
        static = self.resources.get(uri)
        if static is not None:
            return static, {}
        match = self._router.match(uri)
        if match is None:
            return None
        key, variables = match
        return self.templates[key], variables

    def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to every client subscribed to ``uri`` (does not block)."""
        with self._announcing("uri", uri):
            for connection in list(self.connections):
                connection.resource_updated(uri)
            for watcher in list(self._watchers):
                watcher.resource_updated(uri)

    def watch(self, listener: Listener) -> None:
        """Tell ``listener`` of every list change and resource update here (a mount, a response cache)."""
        self._watchers.append(listener)

    def notify_list_changed(self, kind: str) -> None:
        """Send ``notifications/<kind>/list_changed`` to every client (``kind``: tools, prompts or resources), for
        a list that changed other than through ``add_*``/``remove_*`` here (which notify by themselves)."""
        if kind not in ("tools", "prompts", "resources"):
            raise ValueError(f"kind must be 'tools', 'prompts' or 'resources', not {kind!r}")
        with self._announcing("list", kind):
            self._changed(kind)

    def _announcing(self, what: str, value: str) -> AbstractContextManager[None]:
        return self.fan_out(what, value) if self.fan_out is not None else contextlib.nullcontext()

    # -- skills -----------------------------------------------------------------------------------

    def add_skill_folder(
        self,
        path: str | os.PathLike[str],
        *,
        prefix: str = "",
        watch: bool = False,
        poll_interval: float = 1.0,
    ) -> str:
        """Serve the skill in the folder ``path`` (its ``SKILL.md`` and every file under it); returns its URI.

        The URI is ``skill://<prefix>/<name>/SKILL.md``, ``name`` being the frontmatter's (which must be the
        folder's name). Files are read when a client reads them; paths leaving the folder (``..``, symlinks) are
        never served. With ``watch`` the folder is checked every ``poll_interval`` seconds while the server runs,
        and clients are told when its files change. Needs the ``skills`` extra (PyYAML).
        """
        source = folder_skill(path, prefix=prefix, poll_interval=poll_interval if watch else None)
        self.skills.add(source)
        return source.uri

    def add_skills(self, root: str | os.PathLike[str], *, watch: bool = False, poll_interval: float = 1.0) -> list[str]:
        """Serve every skill folder under ``root`` (``root/ops/deploy/SKILL.md`` is ``skill://ops/deploy/SKILL.md``:
        the folders above a skill are its prefix), as ``add_skill_folder()`` does each; returns their URIs."""
        return [
            self.add_skill_folder(folder, prefix=prefix, watch=watch, poll_interval=poll_interval)
            for folder, prefix in skill_folders(root)
        ]

    def add_skill(self, skill_md: str, files: Mapping[str, str | bytes] | None = None, *, prefix: str = "") -> str:
        """Serve a skill given in code: the text of its ``SKILL.md`` and its other files (a path relative to the
        skill's root -> text or bytes); returns its URI, as ``add_skill_folder()`` does."""
        source = code_skill(skill_md, files, prefix=prefix)
        self.skills.add(source)
        return source.uri

    # -- apps -------------------------------------------------------------------------------------

    def add_app(
        self,
        uri: str,
        html: str,
        *,
        tools: Sequence[str] = (),
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        csp: AppCsp | None = None,
        permissions: AppPermissions | None = None,
        domain: str | None = None,
        prefers_border: bool | None = None,
        visibility: Sequence[Literal["model", "app"]] | None = None,
    ) -> None:
        """Serve ``html`` as the MCP App at ``uri`` (``ui://...``) and bind the named ``tools`` to it.

        The resource is ``text/html;profile=mcp-app`` with ``_meta.ui`` from ``csp``, ``permissions``, ``domain``
        and ``prefers_border``; each tool gets ``_meta.ui.resourceUri`` (and ``visibility``: ``["app"]`` hides a
        tool from the model). Clients that did not declare the extension see neither, so each tool's result must
        make sense without its app. Tools must be registered first (``ValueError`` otherwise).
        """
        self.apps.add(
            uri,
            html,
            tools=tools,
            name=name,
            title=title,
            description=description,
            csp=csp,
            permissions=permissions,
            domain=domain,
            prefers_border=prefers_border,
            visibility=visibility,
        )

    # -- prompts ----------------------------------------------------------------------------------

    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
    ) -> Callable[[F], F]:
        """Register the decorated function as a prompt.

        Its parameters are the prompt's arguments (required unless they have a default; documented with
        ``Annotated[str, Field(description=...)]`` or the docstring). It returns a string (one user
        message), content, ``PromptMessage`` objects, or a list of them.
        """
        options: PromptOptions = {
            "name": name,
            "title": title,
            "description": description,
            "icons": icons,
            "meta": meta,
        }

        _refuse_bare("prompt", name, "prompt()")
        ScopeTable.checked(scopes)  # refused at the decorator, before anything is registered

        def register(fn: F) -> F:
            self.scopes.require("prompts", self.add_prompt(fn, **options).name, scopes)
            return fn

        return register

    def add_prompt(self, fn: Callable[..., Any], **options: Unpack[PromptOptions]) -> PromptDefinition:
        """Register ``fn`` as a prompt; the non-decorator form of ``prompt()``."""
        return self._add(self.prompts, self._watched(make_prompt(fn, **options), "prompt"), "prompts")

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt; raises ``KeyError`` if there is none by that name."""
        del self.prompts[name]
        self._changed("prompts")

    # -- completion -------------------------------------------------------------------------------

    def completion(self) -> Callable[[F], F]:
        """Register the decorated function as the ``completion/complete`` handler.

        It is called as ``fn(ref, argument, context)`` with a ``PromptReference`` or
        ``ResourceTemplateReference``, the ``CompletionArgument`` being typed, and the
        ``CompletionContext`` (already-resolved arguments, 2025-06-18+) or None, and returns a list of
        suggestions (at most 100 are sent), a ``Completion``, or None.
        """

        def register(fn: F) -> F:
            self.completion_handler = fn
            return fn

        return register

    def completer(self, ref: PromptReference | ResourceTemplateReference) -> tuple[CompletionHandler, Any] | None:
        """The handler that completes ``ref``, with ``ref`` as that handler names it: a mounted server's own
        ``completion()`` handler serves its prompts and templates, this server's serves the rest."""
        for mount in self.mounts:
            found = mount.completer(ref)
            if found is not None:
                return found
        return (self.completion_handler, ref) if self.completion_handler is not None else None

    def roots_changed_handlers(self) -> list[Callable[[list[Root]], Any]]:
        """This server's ``on_roots_changed`` handler and those of the servers mounted in it, outermost first."""
        own = [self.roots_changed_handler] if self.roots_changed_handler is not None else []
        return own + [handler for mount in self.mounts for handler in mount.child.roots_changed_handlers()]

    def on_roots_changed(self) -> Callable[[F], F]:
        """Register the decorated function to receive a client's roots each time it says they changed.

        The server answers ``notifications/roots/list_changed`` (legacy era) by asking for the roots and
        calling ``fn(roots)`` with the ``Root`` list, sync or async; its exceptions are logged.
        """

        def register(fn: F) -> F:
            self.roots_changed_handler = fn
            return fn

        return register

    # -- registry plumbing ------------------------------------------------------------------------

    def _watched(self, definition: D, kind: str) -> D:
        """``definition`` with the warning about holding the event loop, unless the server turned it off."""
        if self.blocking_warning is None:
            return definition
        label = definition.uri if isinstance(definition, ResourceDefinition) else definition.name
        return attrs.evolve(definition, watch=Watch(self.blocking_warning, f"{kind} {label!r}"))

    def _add(self, table: dict[str, D], definition: D, kind: str, *, key: str | None = None) -> D:
        key = key or definition.name
        if key in table:
            raise ValueError(f"{kind}: {key!r} is already registered")
        table[key] = definition
        self._changed(kind)
        return definition

    def _changed(self, kind: str) -> None:
        self._listing_cache = {k: v for k, v in self._listing_cache.items() if not k[0].startswith(kind)}
        for connection in list(self.connections):
            connection.list_changed(kind)
        for watcher in list(self._watchers):
            watcher.list_changed(kind)

    def listing(self, method: str, version: str) -> list[dict[str, Any]]:
        """Every item of a ``*/list`` method as ``version`` defines it, in registration order (cached)."""
        key = (method, version)
        cached = self._listing_cache.get(key)
        if cached is None:
            tables: dict[str, Mapping[str, ToolDefinition | ResourceDefinition | PromptDefinition]] = {
                "tools/list": self.tools,
                "resources/list": self.resources,
                "resources/templates/list": self.templates,
                "prompts/list": self.prompts,
            }
            table = tables[method]
            cached = self._listing_cache[key] = [item.wire(version) for item in table.values()]
        return cached

    # -- middleware -------------------------------------------------------------------------------

    def middleware(self, function: M) -> M:
        """Wrap ``function`` around every request and notification this server serves (see docs/middleware.md).

        ``async def mw(call: RequestInfo, call_next) -> result``; it runs inside the request's cancel scope, sees
        what ``call_next()`` returns or raises, may return its own result or raise ``McpError``. The first one
        registered is the outermost.
        """
        require_async("middleware", function)
        self.middleware_chain = (*self.middleware_chain, function)
        return function

    def outbound_middleware(self, function: M) -> M:
        """Wrap ``function`` around every request a handler sends the client (``ctx.sample()``, ``ctx.elicit()``,
        ``ctx.list_roots()``, ``ctx.request()``) in a session; ``call.params`` may be replaced before
        ``call_next()``. The first one registered is the outermost."""
        require_async("middleware", function)
        self.outbound_chain = (*self.outbound_chain, function)
        return function

    # -- extensions and custom methods -------------------------------------------------------------

    def extension(self, identifier: str, settings: Mapping[str, Any] | None = None) -> None:
        """Declare ``capabilities.extensions[identifier] = settings``: in ``server/discover`` on 2026-07-28, and in
        the ``initialize`` result of the legacy revisions, where SEP-2133 negotiates extensions too."""
        self.custom.add_extensions("extension", {identifier: settings})

    def request_handler(self, method: str) -> Callable[[F], F]:
        """Serve the custom request ``method`` with ``async def handler(params, ctx) -> dict | None``.

        ``params`` is the request's params dict (or None), ``ctx`` its ``Context``: progress, logging,
        cancellation and errors work as for a tool, except that an exception is a JSON-RPC error (``McpError``
        as raised, anything else -32603), never an ``isError`` result. A method MCP defines cannot be replaced.
        """
        _refuse_bare("request_handler", method, 'request_handler("vendor/method")')

        def register(fn: F) -> F:
            self.custom.add_request(method, fn)
            return fn

        return register

    def notification_handler(self, method: str) -> Callable[[F], F]:
        """Receive the custom notification ``method`` with ``async def handler(params) -> None`` (run in the
        session's reader, in arrival order: keep it short; its exceptions are logged)."""
        _refuse_bare("notification_handler", method, 'notification_handler("vendor/method")')

        def register(fn: F) -> F:
            self.custom.add_notification(method, fn)
            return fn

        return register

    # -- what connections ask of the registry -----------------------------------------------------

    def required_scopes(self, method: str, params: Mapping[str, Any]) -> frozenset[str]:
        """The scopes a request needs (``scopes=`` of the tool, resource or prompt it names)."""

        def resource_key(uri: str) -> str | None:
            if uri in self.resources:
                return uri
            match = self._router.match(uri)
            return match[0] if match is not None else None

        return self.scopes.needed(method, params, resource_key)

    def capabilities(self, version: str) -> ServerCapabilities:
        """What ``initialize`` declares on ``version``: the features that have something registered."""
        return ServerCapabilities(
            tools=ToolsCapability(list_changed=True) if self.tools else None,
            resources=ResourcesCapability(subscribe=True, list_changed=True)
            if self.resources or self.templates
            else None,
            prompts=PromptsCapability(list_changed=True) if self.prompts else None,
            logging={},
            completions={} if self.offers("completions") and has(version, Feature.COMPLETIONS) else None,
            **self._extensions(version),
        )

    def _extensions(self, version: str) -> dict[str, Any]:
        """The task capability entries, the ``extensions`` declared (on every revision: SEP-2133 negotiates
        extensions in ``initialize`` too, and the skills and apps extensions are used there) and the deadline
        extension (2026-07-28)."""
        entries = self.custom.declared(task_capabilities(self.tools.values(), version))
        if has(version, Feature.DEADLINES):
            entries = declare_deadlines(entries)
        for extension in (self.skills, self.apps):
            if extension.offered:
                entries["extensions"] = {**(entries.get("extensions") or {}), **extension.declaration()}
        return entries

    def offers(self, capability: str) -> bool:
        """True if this server serves the methods behind ``capability`` ("tools", "prompts", ...)."""
        if capability == "tools":  # asked on every tools/call
            return bool(self.tools)
        if capability == "completions":
            return self.completion_handler is not None or any(m.child.offers("completions") for m in self.mounts)
        if capability == "resources":
            return bool(self.resources or self.templates)
        if capability == "logging":
            return True
        if capability == "tasks":
            return bool(task_capabilities(self.tools.values(), V2025_11_25))
        return bool(getattr(self, capability))

    def initialize_result(self, version: str) -> dict[str, Any]:
        """The ``initialize`` result for a client that negotiated ``version``."""
        info = project("Implementation", to_wire(self.info), version)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": to_wire(self.capabilities(version)),
            "serverInfo": info,
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def discover_result(self) -> dict[str, Any]:
        """The ``server/discover`` result (2026-07-28); ``decorate_modern_result`` adds the envelope."""
        result: dict[str, Any] = {
            # Modern revisions first: a client picks from this list for its next requests.
            "supportedVersions": [*reversed(MODERN_VERSIONS), *reversed(LEGACY_VERSIONS)],
            "capabilities": to_wire(self.capabilities(MODERN_VERSIONS[-1])),
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def decorate_modern_result(self, method: str, result: dict[str, Any], *, cacheable: bool) -> dict[str, Any]:
        """Add what every 2026-07-28 result carries: ``resultType``, serverInfo, and caching hints."""
        result.setdefault("resultType", RESULT_COMPLETE)
        meta = result.get("_meta")
        result["_meta"] = {**(meta or {}), META_SERVER_INFO: self._server_info_wire}
        if method in _CACHEABLE_METHODS and result["resultType"] == RESULT_COMPLETE:
            result["ttlMs"] = self.cache_ttl_ms if cacheable else 0
            result["cacheScope"] = self.cache_scope if cacheable else "private"
        return result

    @functools.cached_property
    def _server_info_wire(self) -> dict[str, Any]:
        return to_wire(self.info)

    # -- lifespan ---------------------------------------------------------------------------------

    def rerun_task(self, record: TaskRecord) -> Callable[[], tuple[Any, ToolDefinition, Work]] | None:
        """How to run again here a task taken over from a process that died (``retry_on_loss``); None: this
        server cannot (``Server`` can: it has connections to run the work through)."""
        return None

    @asynccontextmanager
    async def running(self: Self) -> AsyncIterator[Any]:
        """Run the lifespan (once) around whatever is served inside; yields its state.

        ``serve_stdio()`` enters this itself; wrap several transports in it to share one lifespan.
        Nested uses are no-ops.
        """
        if self._running:
            yield self.lifespan_state
            return
        self._running = True
        try:
            async with self.tasks.serving(self.rerun_task), contextlib.AsyncExitStack() as stack:
                if self._lifespan is not None:
                    self.lifespan_state = await stack.enter_async_context(self._lifespan(self))
                for mount in self.mounts:  # mounted servers' lifespans run inside this one's
                    await stack.enter_async_context(mount.child.running())
                await stack.enter_async_context(self.skills.watching())
                yield self.lifespan_state
        finally:
            self._running = False
            self.lifespan_state = None
