"""Serve any MCP server (a stdio command or a URL, either era) as a trio_mcp ``Server``.

``async with open_proxy(["node", "server.js"]) as server: await server.serve_http(...)`` connects to the upstream
server and mirrors what it offers: its tools, prompts, resources and templates, its name, version and
instructions. Served on any transport, the proxy is also an era bridge: a stdio or legacy-era server becomes a
stateless 2026-07-28 endpoint, and the other way round.

What crosses, and how exactly:

* a call is forwarded with its arguments and returns the upstream result unchanged (content, structured content,
  ``isError``); upstream progress is reported on the downstream call as it arrives;
* cancelling the downstream call cancels the upstream one (the handler's cancel scope ends the upstream request,
  which sends ``notifications/cancelled`` or closes its HTTP stream);
* requests the upstream server makes during a call (sampling, elicitation, roots) and the logs it sends go to the
  downstream client of that call: exactly, with any number of calls in flight, when the upstream is reached over
  HTTP (a modern (2026-07-28) upstream asks inside the call's own answer; a legacy-era one sends them on the
  call's own response stream). Over stdio they name no call: they go to the one in flight, to the latest when
  there are several; with none a request is refused and a log is dropped. On a modern (2026-07-28) downstream, the downstream client answers by calling
  again, so the upstream call is made again from the start;
* upstream ``list_changed`` notifications refresh the mirror, and downstream clients are told; argument
  completion is forwarded too;
* skills (SEP-2640): the upstream entries are served unchanged (digests included), and every file they list
  is read from upstream, so a downstream client verifies what the upstream server sent.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any

import attrs
import trio

from ._skill_format import SKILLS_EXTENSION_ID
from ._util import collapse_exception_groups
from ._wire.convert import to_wire
from .client import Client, connect_stdio_client
from .errors import METHOD_NOT_FOUND, McpError, TrioMcpError
from .server import Context, Server
from .skills import Skill
from .transports._base import carried_tag, request_tag
from .types import (
    CallToolResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    ProgressNotificationParams,
    Prompt,
    Resource,
    ResourceTemplate,
    Root,
    Tool,
)

__all__ = ["Proxy", "open_proxy"]

logger = logging.getLogger("trio_mcp.proxy")

#: The downstream call whose upstream call is running in this task (and the tasks it starts): a modern
#: upstream's input requests are answered inside that call, so they find their own downstream client here.
_calling: ContextVar[Context | None] = ContextVar("trio_mcp_proxy_calling", default=None)


class Proxy:
    """The relay between one upstream ``Client`` and the ``Server`` that mirrors it.

    Build the upstream client with ``client_options()`` (so the upstream server's requests and logs reach the
    relay), then ``await attach(client, nursery)``; ``server`` is then ready to serve. ``open_proxy`` does both.
    """

    def __init__(self, *, name: str | None = None) -> None:
        self.name = name
        self.upstream: Client | None = None
        self.server: Server | None = None
        self._in_flight: list[Context] = []
        self._nursery: trio.Nursery | None = None

    def client_options(self) -> dict[str, Any]:
        """Callbacks for the upstream ``Client``: its server's requests and notifications come to the relay."""
        return {
            "sampling": self._sample,
            "elicitation": self._elicit,
            "roots": self._roots,
            "on_log": self._log,
            "on_list_changed": self._list_changed,
        }

    async def attach(self, upstream: Client, nursery: trio.Nursery) -> Server:
        """Mirror ``upstream`` in a new ``Server``; ``nursery`` runs refreshes after upstream ``list_changed``."""
        info = upstream.server_info
        self.upstream = upstream
        self._nursery = nursery
        self.server = Server(
            self.name or info.name, version=info.version, title=info.title, instructions=upstream.instructions
        )
        for kind in ("tools", "prompts", "resources"):
            await self._refresh(kind)
        if SKILLS_EXTENSION_ID in (upstream.server_capabilities.extensions or {}):
            await self._refresh_skills()
        if upstream.server_capabilities.completions is not None:
            self.server.completion_handler = self._complete
        return self.server

    # -- the mirror -------------------------------------------------------------------------------

    def _offers(self, kind: str) -> bool:
        assert self.upstream is not None
        return getattr(self.upstream.server_capabilities, kind) is not None

    async def _refresh(self, kind: str) -> None:
        server, upstream = self.server, self.upstream
        assert server is not None and upstream is not None
        if not self._offers(kind):
            return
        if kind == "tools":
            tools = [tool async for tool in upstream.iter_tools()]
            for name in list(server.tools):
                server.remove_tool(name)
            for tool in tools:
                definition = server.add_tool(
                    self._forward_tool(tool),
                    name=tool.name,
                    title=tool.title,
                    description=tool.description,
                    annotations=tool.annotations,
                    icons=tool.icons,
                    input_schema=tool.input_schema,
                    meta=tool.meta,
                )
                if tool.output_schema is not None:  # advertised as upstream does; results pass through as they are
                    schema = attrs.evolve(definition.schema, output_schema=dict(tool.output_schema))
                    server.tools[tool.name] = attrs.evolve(definition, schema=schema, structured=True)
        elif kind == "prompts":
            prompts = [prompt async for prompt in upstream.iter_prompts()]
            for name in list(server.prompts):
                server.remove_prompt(name)
            for prompt in prompts:
                forward = self._forward_prompt(prompt)
                if forward is not None:
                    server.add_prompt(forward, name=prompt.name, title=prompt.title, description=prompt.description)
        else:
            resources: list[Resource | ResourceTemplate] = [resource async for resource in upstream.iter_resources()]
            resources += [template async for template in upstream.iter_resource_templates()]
            for uri in [*server.resources, *server.templates]:
                server.remove_resource(uri)
            for item in resources:
                forward = self._forward_resource(item)
                if forward is not None:
                    server.add_resource(
                        forward,
                        _uri_of(item),
                        name=item.name,
                        title=item.title,
                        description=item.description,
                        mime_type=item.mime_type,
                    )
            if server.skills.relaying:
                await self._refresh_skills()

    async def _refresh_skills(self) -> None:
        """Pass the upstream skills on as they are: their entries verbatim, and every file they list readable
        here (a file upstream does not list in resources/list gets a forwarder of its own)."""
        server, upstream = self.server, self.upstream
        assert server is not None and upstream is not None
        skills = await upstream.list_skills()
        server.skills.relay(skills, self._fetch_skill)
        for skill in skills:
            self._forward_files(skill)

    async def _fetch_skill(self, uri: str) -> Skill:
        """``skills/get`` of a skill upstream did not list: its current entry, its files made readable here."""
        assert self.upstream is not None
        skill = await self.upstream.get_skill(uri)
        self._forward_files(skill)
        return skill

    def _forward_files(self, skill: Skill) -> None:
        assert self.server is not None
        for uri in [] if skill.resources == "dynamic" else [item.uri for item in skill.resources]:
            if self.server.find_resource(uri) is None:
                self.server.add_resource(self._forward_resource(Resource(uri=uri, name=uri)), uri)

    def _forward_tool(self, tool: Tool) -> Any:
        async def forward(ctx: Context, **arguments: Any) -> CallToolResult:
            async def progress(update: ProgressNotificationParams) -> None:
                await ctx.report_progress(update.progress, update.total, update.message)

            assert self.upstream is not None
            with self._serving(ctx):
                return await self.upstream.call_tool(
                    tool.name, arguments, on_progress=progress, timeout=None, validate_output=False
                )

        return forward

    def _forward_prompt(self, prompt: Prompt) -> Any:
        names = [argument.name for argument in prompt.arguments or []]
        if not all(name.isidentifier() and name != "ctx" for name in names):
            logger.warning("prompt %r has argument names that are not identifiers; not proxied", prompt.name)
            return None

        async def forward(ctx: Context, **arguments: str) -> Any:
            assert self.upstream is not None
            with self._serving(ctx):
                given = {key: value for key, value in arguments.items() if value is not None}
                result = await self.upstream.get_prompt(prompt.name, given)
            return list(result.messages)

        forward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
            + [
                inspect.Parameter(
                    argument.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=str,
                    **({} if argument.required else {"default": None}),
                )
                for argument in prompt.arguments or []
            ]
        )
        return forward

    def _forward_resource(self, item: Resource | ResourceTemplate) -> Any:
        uri = _uri_of(item)
        variables = _template_variables(uri) if isinstance(item, ResourceTemplate) else []
        if not all(name.isidentifier() and name != "ctx" for name in variables):
            logger.warning("resource template %r has variables that are not identifiers; not proxied", uri)
            return None

        async def forward(ctx: Context, **values: Any) -> Any:
            assert self.upstream is not None
            with self._serving(ctx):
                target = uri if not variables else _expand(uri, values)
                return list((await self.upstream.read_resource(target)).contents)

        forward.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
            + [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=str) for name in variables]
        )
        return forward

    async def _complete(self, ref: Any, argument: CompletionArgument, context: CompletionContext | None) -> Completion:
        assert self.upstream is not None
        return (await self.upstream.complete(ref, argument, context)).completion

    # -- what the upstream server sends -----------------------------------------------------------

    @contextmanager
    def _serving(self, ctx: Context) -> Iterator[None]:
        """Make ``ctx`` the call that upstream requests and logs go to while its upstream call runs."""
        self._in_flight.append(ctx)
        calling, tagged = _calling.set(ctx), request_tag.set(ctx)
        try:
            yield
        finally:
            request_tag.reset(tagged)
            _calling.reset(calling)
            self._in_flight.remove(ctx)

    def _current(self, what: str) -> Context:
        """The downstream call ``what`` belongs to: the one running here (a modern upstream asks inside its
        call), the one whose upstream request's stream carried it (Streamable HTTP), else the latest in flight."""
        for known in (_calling.get(), carried_tag.get()):
            if isinstance(known, Context) and known in self._in_flight:
                return known
        if not self._in_flight:
            raise McpError(METHOD_NOT_FOUND, f"{what}: no downstream call is in flight to forward it to")
        return self._in_flight[-1]

    async def _sample(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        ctx = self._current("sampling/createMessage")
        return await ctx.sample(
            [to_wire(message) for message in params.messages],
            max_tokens=params.max_tokens,
            system_prompt=params.system_prompt,
            temperature=params.temperature,
            stop_sequences=params.stop_sequences,
            model_preferences=params.model_preferences,
            include_context=params.include_context,
            tools=params.tools,
            tool_choice=params.tool_choice,
            metadata=params.metadata,
        )

    async def _elicit(self, params: ElicitRequestParams) -> ElicitResult:
        ctx = self._current("elicitation/create")
        wire = to_wire(params)
        if "requestedSchema" not in wire:
            raise McpError(METHOD_NOT_FOUND, "only form-mode elicitation is forwarded by the proxy")
        return await ctx.elicit(wire["message"], wire["requestedSchema"])

    async def _roots(self) -> Sequence[Root]:
        return await self._current("roots/list").list_roots()

    async def _log(self, params: LoggingMessageNotificationParams) -> None:
        if not self._in_flight:
            logger.debug("upstream log with no call in flight, dropped: %s", params.data)
            return
        with trio.move_on_after(5):
            await self._current("notifications/message").log(params.level, params.data, logger=params.logger)  # type: ignore[arg-type]

    def _list_changed(self, kind: str) -> None:
        if self._nursery is not None and kind in ("tools", "prompts", "resources"):
            self._nursery.start_soon(self._refresh_quietly, kind)

    async def _refresh_quietly(self, kind: str) -> None:
        try:
            await self._refresh(kind)
        except TrioMcpError as exc:
            logger.warning("could not refresh the upstream %s: %s", kind, exc)


def _uri_of(item: Resource | ResourceTemplate) -> str:
    return item.uri if isinstance(item, Resource) else item.uri_template


def _template_variables(template: str) -> list[str]:
    from ._uri_template import UriTemplate

    return list(UriTemplate(template).variables)


def _expand(template: str, values: Mapping[str, Any]) -> str:
    from ._uri_template import UriTemplate

    return UriTemplate(template).expand(dict(values))


@asynccontextmanager
async def open_proxy(
    command: Sequence[str] | None = None,
    *,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
    name: str | None = None,
    **client_options: Any,
) -> AsyncIterator[Server]:
    """Connect to the upstream server (``command`` over stdio, or ``url`` over HTTP) and yield its mirror.

    ``client_options`` go to the upstream ``Client`` (``protocol_version``, ``request_timeout``...). Leaving the
    block closes the upstream connection; serve the yielded server inside it.
    """
    if (command is None) == (url is None):
        raise ValueError("give exactly one of command= (a stdio server) or url= (an HTTP server)")
    proxy = Proxy(name=name)
    options = {**client_options, **proxy.client_options()}
    with collapse_exception_groups():
        async with trio.open_nursery() as nursery:
            if command is not None:
                upstream = await connect_stdio_client(nursery, command, **options)
            else:
                from .client import connect_http_client

                assert url is not None
                upstream = await connect_http_client(nursery, url, headers=headers, **options)
            try:
                yield await proxy.attach(upstream, nursery)
            finally:
                await upstream.aclose()
                nursery.cancel_scope.cancel()
