"""Hand-written round trips of the wire types, domain by domain and revision by revision.

Every example is written for these tests. ``round_trip`` checks that ``to_wire(from_wire(x)) == x`` and that the
value fitted its class exactly (no key left over in ``extra``, no ``UnknownContent``), unless a test is about
exactly those fallbacks.
"""

import json
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trio_mcp.types as T
from trio_mcp._wire import versions as V
from trio_mcp._wire.convert import (
    WireFormatError,
    from_wire,
    params_from_wire,
    to_wire,
    wire_name,
)
from trio_mcp._wire.methods import METHODS, TASKS_EXTENSION_METHODS, MethodSpec
from trio_mcp.errors import INVALID_PARAMS, McpError

EMPTY_FORM = {"type": "object", "properties": {}}


def _leftovers(obj: Any, path: str = "$") -> list[str]:
    found: list[str] = []
    if isinstance(obj, (T.UnknownContent, T.UnknownInputRequest)):
        found.append(f"{path}: unknown")
    elif isinstance(obj, T.WireType):
        if obj.extra:
            found.append(f"{path}: extra {sorted(obj.extra)}")
        for field in attrs.fields(type(obj)):
            if field.name != "extra":
                found += _leftovers(getattr(obj, field.name), f"{path}.{field.name}")
    elif isinstance(obj, list):
        for i, item in enumerate(obj):
            found += _leftovers(item, f"{path}[{i}]")
    elif isinstance(obj, dict):
        for key, item in obj.items():
            found += _leftovers(item, f"{path}[{key!r}]")
    return found


def round_trip(data: Any, cls: Any, *, exact: bool = True) -> Any:
    before = json.dumps(data, sort_keys=True)
    obj = from_wire(data, cls)
    assert json.dumps(data, sort_keys=True) == before, "from_wire must not modify its input"
    assert to_wire(obj) == data
    if exact:
        assert _leftovers(obj) == []
    return obj


# --- conventions -----------------------------------------------------------------------------------------------

PUBLIC_CLASSES = list(dict.fromkeys(getattr(T, name) for name in T.__all__ if attrs.has(getattr(T, name))))


def test_every_public_class_follows_the_conventions() -> None:
    assert len(PUBLIC_CLASSES) >= 115
    for cls in PUBLIC_CLASSES:
        assert issubclass(cls, T.WireType), cls
        assert cls.__setattr__ is not object.__setattr__, f"{cls} is not frozen"
        assert all(a.kw_only for a in attrs.fields(cls)), cls
        assert cls.__doc__ and cls.__doc__.strip() and cls.__doc__ != T.WireType.__doc__ or cls is T.WireType, cls
        names = [a.name for a in attrs.fields(cls)]
        assert names[0] == "extra", cls
        # Every field's type is resolved (no string forward references left for cattrs).
        assert all(not isinstance(a.type, str) for a in attrs.fields(cls)), cls


def test_every_public_name_is_exported_once() -> None:
    assert len(T.__all__) == len(set(T.__all__))
    for name in T.__all__:
        assert hasattr(T, name), name


def test_wire_names_are_generated_from_field_names() -> None:
    assert wire_name("meta") == "_meta"
    assert wire_name("mime_type") == "mimeType"
    assert wire_name("read_only_hint") == "readOnlyHint"
    assert wire_name("tool_use_id") == "toolUseId"
    assert wire_name("uri") == "uri"


def test_every_class_round_trips_its_minimal_instance() -> None:
    """Build each class from Python with its required fields only; it must survive ``to_wire``/``from_wire``."""
    samples: dict[Any, Any] = {
        str: "s",
        int: 3,
        float: 0.5,
        bool: True,
    }
    for cls in PUBLIC_CLASSES:
        if cls in (T.UnknownContent, T.UnknownInputRequest):
            continue
        kwargs = {}
        for field in attrs.fields(cls):
            if field.default is attrs.NOTHING:
                kwargs[field.name] = _sample(field.type, samples)
        obj = cls(**kwargs)
        again = from_wire(to_wire(obj), cls)
        assert again == obj, cls


def test_equality_hash_and_repr_are_those_attrs_would_generate() -> None:
    """``WireType`` writes ``==``, ``hash`` and ``repr`` once for all classes (generating them per class made
    ``import trio_mcp`` slow); each class must still behave as if attrs had generated them."""
    for cls in PUBLIC_CLASSES:
        names = [f.name for f in attrs.fields(cls)]
        twin = attrs.make_class(cls.__name__, {name: attrs.field(kw_only=True) for name in names}, frozen=True)
        values = {name: f"v-{name}" for name in names}
        other = {**values, names[-1]: 2}
        assert repr(cls(**values)) == repr(twin(**values)), cls
        assert cls(**values) == cls(**values) and not cls(**values) != cls(**values)
        assert cls(**values) != cls(**other) and hash(cls(**values)) == hash(cls(**values))
        assert cls(**values) != twin(**values) and cls(**values).__eq__(values) is NotImplemented
        with pytest.raises(TypeError, match="unhashable"):
            hash(cls(**{**values, names[-1]: []}))
    loop: list[Any] = []
    loop.append(T.TextContent(text="x", meta={"loop": loop}))
    assert repr(loop[0]) == "TextContent(extra=None, type='text', text='x', annotations=None, meta={'loop': [...]})"


def _sample(t: Any, samples: dict[Any, Any]) -> Any:
    if t in samples:
        return samples[t]
    origin = getattr(t, "__origin__", None)
    args = getattr(t, "__args__", ())
    if origin is list:
        return []
    if origin is dict:
        return {}
    if repr(t).startswith("typing.Literal"):
        return args[0]
    if args:  # a union: the first member that can be sampled
        for member in args:
            if member is not type(None):
                return _sample(member, samples)
    if t is Any:
        return {"any": "json"}
    if attrs.has(t):
        return t(**{f.name: _sample(f.type, samples) for f in attrs.fields(t) if f.default is attrs.NOTHING})
    raise AssertionError(f"no sample for {t!r}")


# --- 2024-11-05 ------------------------------------------------------------------------------------------------


def test_initialize_2024_11_05() -> None:
    params = round_trip(
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "experimental": {"x": {"on": 1}}},
            "clientInfo": {"name": "probe", "version": "0.1"},
        },
        T.InitializeRequestParams,
    )
    assert params.capabilities.roots == T.RootsCapability(list_changed=True)
    assert params.capabilities.sampling == T.SamplingCapability()
    result = round_trip(
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {
                "logging": {},
                "prompts": {"listChanged": False},
                "resources": {"subscribe": True, "listChanged": True},
                "tools": {},
            },
            "serverInfo": {"name": "srv", "version": "2"},
            "instructions": "Call lookup first.",
        },
        T.InitializeResult,
    )
    assert result.capabilities.resources == T.ResourcesCapability(subscribe=True, list_changed=True)
    assert result.capabilities.prompts.list_changed is False


def test_resources_2024_11_05() -> None:
    page = round_trip(
        {
            "resources": [
                {
                    "uri": "mem://notes/1",
                    "name": "note one",
                    "mimeType": "text/markdown",
                    "size": 120,
                    "annotations": {"audience": ["user"], "priority": 0.25},
                }
            ],
            "nextCursor": "page-2",
        },
        T.ListResourcesResult,
    )
    assert page.resources[0].annotations.priority == 0.25
    round_trip(
        {"resourceTemplates": [{"uriTemplate": "mem://notes/{id}", "name": "notes"}]}, T.ListResourceTemplatesResult
    )
    read = round_trip(
        {
            "contents": [
                {"uri": "mem://notes/1", "text": "# one"},
                {"uri": "mem://pics/1", "mimeType": "image/gif", "blob": "R0lGOA=="},
            ]
        },
        T.ReadResourceResult,
    )
    assert isinstance(read.contents[0], T.TextResourceContents)
    assert isinstance(read.contents[1], T.BlobResourceContents)
    round_trip({"uri": "mem://notes/1"}, T.SubscribeRequestParams)
    round_trip({"uri": "mem://notes/1"}, T.UnsubscribeRequestParams)
    round_trip({"uri": "mem://notes/1"}, T.ResourceUpdatedNotificationParams)


def test_prompts_2024_11_05() -> None:
    round_trip(
        {"prompts": [{"name": "summarise", "arguments": [{"name": "text", "required": True}]}]},
        T.ListPromptsResult,
    )
    round_trip({"name": "summarise", "arguments": {"text": "long story"}}, T.GetPromptRequestParams)
    result = round_trip(
        {
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Summarise:"}},
                {
                    "role": "user",
                    "content": {"type": "resource", "resource": {"uri": "mem://doc", "text": "body"}},
                },
                {"role": "assistant", "content": {"type": "image", "data": "iVBO", "mimeType": "image/png"}},
            ]
        },
        T.GetPromptResult,
    )
    assert isinstance(result.messages[1].content, T.EmbeddedResource)


def test_tools_2024_11_05() -> None:
    round_trip(
        {
            "tools": [
                {
                    "name": "add",
                    "description": "Adds two numbers",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                        "required": ["a", "b"],
                    },
                }
            ]
        },
        T.ListToolsResult,
    )
    call = round_trip({"name": "add", "arguments": {"a": 1, "b": 2.5}}, T.CallToolRequestParams)
    assert call.arguments == {"a": 1, "b": 2.5}
    round_trip({"content": [{"type": "text", "text": "3.5"}], "isError": False}, T.CallToolResult)


def test_sampling_roots_logging_completion_2024_11_05() -> None:
    round_trip(
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
            "modelPreferences": {"hints": [{"name": "small"}], "costPriority": 1, "speedPriority": 0.5},
            "systemPrompt": "Be brief.",
            "includeContext": "thisServer",
            "temperature": 0,
            "maxTokens": 64,
            "stopSequences": ["\n\n"],
            "metadata": {"trace": "abc"},
        },
        T.CreateMessageRequestParams,
    )
    reply = round_trip(
        {"role": "assistant", "content": {"type": "text", "text": "Hello"}, "model": "m-1", "stopReason": "endTurn"},
        T.CreateMessageResult,
    )
    assert isinstance(reply.content, T.TextContent)
    round_trip({"roots": [{"uri": "file:///srv/repo", "name": "repo"}, {"uri": "file:///tmp"}]}, T.ListRootsResult)
    round_trip({"level": "warning"}, T.SetLevelRequestParams)
    round_trip(
        {"level": "debug", "logger": "db", "data": {"query": "select 1", "ms": 3}}, T.LoggingMessageNotificationParams
    )
    round_trip({"level": "info", "data": None}, T.LoggingMessageNotificationParams)
    completion = round_trip(
        {"ref": {"type": "ref/resource", "uri": "mem://notes/{id}"}, "argument": {"name": "id", "value": "4"}},
        T.CompleteRequestParams,
    )
    assert isinstance(completion.ref, T.ResourceReference)
    round_trip({"completion": {"values": ["40", "41"], "total": 12, "hasMore": True}}, T.CompleteResult)


def test_ping_cancel_progress_2024_11_05() -> None:
    assert from_wire(None, T.RequestParams) == T.RequestParams()
    assert from_wire({}, T.EmptyResult) == T.EmptyResult()
    round_trip({"requestId": 7, "reason": "user pressed stop"}, T.CancelledNotificationParams)
    round_trip({"requestId": "req-7"}, T.CancelledNotificationParams)
    progress = round_trip({"progressToken": "tok", "progress": 50, "total": 100}, T.ProgressNotificationParams)
    assert type(progress.progress) is int  # numbers keep their JSON type
    round_trip({"progressToken": 3, "progress": 0.75}, T.ProgressNotificationParams)
    round_trip({"_meta": {"progressToken": 12}}, T.PaginatedRequestParams)


# --- 2025-03-26 ------------------------------------------------------------------------------------------------


def test_distinctive_fields_2025_03_26() -> None:
    result = round_trip(
        {
            "content": [
                {
                    "type": "audio",
                    "data": "UklGRg==",
                    "mimeType": "audio/wav",
                    "annotations": {"audience": ["assistant"]},
                }
            ]
        },
        T.CallToolResult,
    )
    assert isinstance(result.content[0], T.AudioContent)
    tool = round_trip(
        {
            "name": "rm",
            "inputSchema": {"type": "object"},
            "annotations": {
                "title": "Remove a file",
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": True,
                "openWorldHint": False,
            },
        },
        T.Tool,
    )
    assert tool.annotations.destructive_hint is True
    round_trip({"progressToken": "t", "progress": 2, "total": 4, "message": "halfway"}, T.ProgressNotificationParams)
    round_trip({"completions": {}, "logging": {}}, T.ServerCapabilities)


# --- 2025-06-18 ------------------------------------------------------------------------------------------------


def test_distinctive_fields_2025_06_18() -> None:
    tool = round_trip(
        {
            "name": "forecast",
            "title": "Weather forecast",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
            "outputSchema": {"type": "object", "properties": {"celsius": {"type": "number"}}, "required": ["celsius"]},
            "_meta": {"example.com/cost": 2},
        },
        T.Tool,
    )
    assert tool.title == "Weather forecast" and tool.meta == {"example.com/cost": 2}
    result = round_trip(
        {
            "content": [
                {"type": "text", "text": '{"celsius": 21}', "_meta": {"k": "v"}},
                {
                    "type": "resource_link",
                    "uri": "mem://forecasts/today",
                    "name": "today",
                    "title": "Today's forecast",
                    "mimeType": "application/json",
                    "annotations": {"lastModified": "2025-06-18T10:00:00Z"},
                },
            ],
            "structuredContent": {"celsius": 21},
        },
        T.CallToolResult,
    )
    assert isinstance(result.content[1], T.ResourceLink)
    assert result.structured_content == {"celsius": 21}
    form = round_trip(
        {
            "message": "Who are you?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1}, "age": {"type": "integer", "minimum": 0}},
                "required": ["name"],
            },
        },
        T.ElicitRequestParams,
    )
    assert isinstance(form, T.ElicitRequestFormParams) and form.mode is None
    round_trip({"action": "accept", "content": {"name": "Ada", "age": 36, "subscribed": False}}, T.ElicitResult)
    round_trip({"action": "decline"}, T.ElicitResult)
    round_trip(
        {
            "ref": {"type": "ref/prompt", "name": "greet", "title": "Greeting"},
            "argument": {"name": "language", "value": "fr"},
            "context": {"arguments": {"tone": "formal"}},
        },
        T.CompleteRequestParams,
    )
    round_trip({"elicitation": {}, "roots": {"listChanged": True}}, T.ClientCapabilities)
    round_trip({"name": "srv", "title": "The Server", "version": "1"}, T.Implementation)
    round_trip({"uri": "file:///srv", "_meta": {"k": 1}}, T.Root)


# --- 2025-11-25 ------------------------------------------------------------------------------------------------


def test_icons_and_implementation_2025_11_25() -> None:
    impl = round_trip(
        {
            "name": "srv",
            "version": "3",
            "description": "Weather data",
            "websiteUrl": "https://example.com",
            "icons": [
                {"src": "https://example.com/i.png", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"},
                {"src": "data:image/svg+xml;base64,PHN2Zz4=", "theme": "dark"},
            ],
        },
        T.Implementation,
    )
    assert impl.icons[1].theme == "dark"
    for cls, data in [
        (T.Tool, {"name": "t", "inputSchema": {"type": "object"}, "icons": [{"src": "a.png"}]}),
        (T.Prompt, {"name": "p", "icons": [{"src": "a.png"}]}),
        (T.Resource, {"uri": "mem://r", "name": "r", "icons": [{"src": "a.png"}]}),
        (T.ResourceTemplate, {"uriTemplate": "mem://{x}", "name": "r", "icons": [{"src": "a.png"}]}),
    ]:
        round_trip(data, cls)


def test_sampling_with_tools_2025_11_25() -> None:
    params = round_trip(
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "call-1", "name": "forecast", "input": {"city": "Oslo"}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "toolUseId": "call-1",
                            "content": [{"type": "text", "text": "-3 C"}],
                            "structuredContent": {"celsius": -3},
                            "isError": False,
                        }
                    ],
                },
            ],
            "maxTokens": 200,
            "tools": [{"name": "forecast", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "auto"},
            "task": {"ttl": 60000},
        },
        T.CreateMessageRequestParams,
    )
    use = params.messages[1].content[0]
    assert isinstance(use, T.ToolUseContent) and use.input == {"city": "Oslo"}
    assert isinstance(params.messages[2].content[0], T.ToolResultContent)
    reply = round_trip(
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call-2", "name": "forecast", "input": {}}],
            "model": "m-2",
            "stopReason": "toolUse",
        },
        T.CreateMessageResult,
    )
    assert isinstance(reply.content, list)
    round_trip({"sampling": {"context": {}, "tools": {}}, "elicitation": {"form": {}, "url": {}}}, T.ClientCapabilities)


def test_url_elicitation_2025_11_25() -> None:
    url = round_trip(
        {"mode": "url", "message": "Sign in", "url": "https://example.com/login", "elicitationId": "e-1"},
        T.ElicitRequestParams,
    )
    assert isinstance(url, T.ElicitRequestURLParams) and url.elicitation_id == "e-1"
    round_trip({"mode": "form", "message": "m", "requestedSchema": EMPTY_FORM}, T.ElicitRequestParams)
    round_trip({"elicitationId": "e-1"}, T.ElicitationCompleteNotificationParams)
    assert to_wire(T.ElicitRequestURLParams(message="m", url="https://x")) == {
        "mode": "url",
        "message": "m",
        "url": "https://x",
    }


def test_enum_schemas_2025_11_25() -> None:
    cases = [
        ({"type": "string", "format": "email", "default": "a@b.c"}, T.StringSchema),
        ({"type": "integer", "minimum": 1, "maximum": 5, "default": 3}, T.NumberSchema),
        ({"type": "boolean", "default": False}, T.BooleanSchema),
        ({"type": "string", "enum": ["r", "g"], "default": "r"}, T.UntitledSingleSelectEnumSchema),
        ({"type": "string", "oneOf": [{"const": "r", "title": "Red"}]}, T.TitledSingleSelectEnumSchema),
        ({"type": "array", "items": {"type": "string", "enum": ["r"]}, "maxItems": 1}, T.UntitledMultiSelectEnumSchema),
        ({"type": "array", "items": {"anyOf": [{"const": "r", "title": "Red"}]}}, T.TitledMultiSelectEnumSchema),
        ({"type": "string", "enum": ["r"], "enumNames": ["Red"]}, T.LegacyTitledEnumSchema),
    ]
    for data, cls in cases:
        assert isinstance(round_trip(data, T.PrimitiveSchemaDefinition), cls)
    assert to_wire(T.StringSchema(title="Name")) == {"type": "string", "title": "Name"}


def test_core_tasks_2025_11_25() -> None:
    task = {
        "taskId": "t-1",
        "status": "working",
        "statusMessage": "crunching",
        "createdAt": "2025-11-25T10:00:00Z",
        "lastUpdatedAt": "2025-11-25T10:00:05Z",
        "ttl": None,
        "pollInterval": 500,
    }
    call = round_trip({"name": "slow", "arguments": {}, "task": {"ttl": 30000}}, T.CallToolRequestParams)
    assert call.task == T.TaskMetadata(ttl=30000)
    created = round_trip(
        {"task": task, "_meta": {"io.modelcontextprotocol/model-immediate-response": "working on it"}},
        T.CreateTaskResult,
    )
    assert created.task.ttl is None
    # ``ttl`` is required and nullable: None is written as null, never dropped.
    assert to_wire(created.task)["ttl"] is None
    round_trip({"taskId": "t-1"}, T.GetTaskRequestParams)
    round_trip({"taskId": "t-1", "_meta": {"progressToken": 1}}, T.GetTaskPayloadRequestParams)
    round_trip({"taskId": "t-1"}, T.CancelTaskRequestParams)
    round_trip({**task, "ttl": 60000}, T.GetTaskResult)
    round_trip({**task, "status": "cancelled"}, T.CancelTaskResult)
    round_trip({"tasks": [task], "nextCursor": "c"}, T.ListTasksResult)
    round_trip({**task, "status": "input_required"}, T.TaskStatusNotificationParams)
    payload = round_trip(
        {
            "content": [{"type": "text", "text": "done"}],
            "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"}},
        },
        T.GetTaskPayloadResult,
        exact=False,
    )
    assert payload.extra == {"content": [{"type": "text", "text": "done"}]}
    round_trip({"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}, T.Tool)
    round_trip(
        {
            "tasks": {
                "list": {},
                "cancel": {},
                "requests": {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}},
            }
        },
        T.ClientCapabilities,
    )
    round_trip({"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}, T.ServerCapabilities)
    round_trip({"taskId": "t-1"}, T.RelatedTaskMetadata)
    with pytest.raises(WireFormatError, match=r"missing required field @ \$\.ttl"):
        from_wire({k: v for k, v in task.items() if k != "ttl"}, T.Task)


# --- 2026-07-28 ------------------------------------------------------------------------------------------------

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1"},
}


def test_cacheable_results_2026_07_28() -> None:
    page = round_trip(
        {
            "resultType": "complete",
            "tools": [{"name": "t", "inputSchema": {"type": "object", "additionalProperties": False}}],
            "ttlMs": 60000,
            "cacheScope": "public",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "srv", "version": "1"}},
        },
        T.ListToolsResult,
    )
    assert (page.result_type, page.ttl_ms, page.cache_scope) == ("complete", 60000, "public")
    for cls, key in [
        (T.ListPromptsResult, "prompts"),
        (T.ListResourcesResult, "resources"),
        (T.ListResourceTemplatesResult, "resourceTemplates"),
    ]:
        round_trip({"resultType": "complete", key: [], "ttlMs": 0, "cacheScope": "private"}, cls)
    round_trip(
        {"resultType": "complete", "contents": [{"uri": "mem://x", "text": ""}], "ttlMs": 5, "cacheScope": "private"},
        T.ReadResourceResult,
    )
    round_trip({"resultType": "complete", "content": [], "structuredContent": [1, "two", None]}, T.CallToolResult)


def test_discover_2026_07_28() -> None:
    round_trip({"_meta": MODERN_META}, T.RequestParams)
    result = round_trip(
        {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {
                "tools": {"listChanged": True},
                "resources": {"subscribe": True},
                "extensions": {"io.modelcontextprotocol/tasks": {}},
            },
            "instructions": "Use search before fetch.",
            "ttlMs": 3600000,
            "cacheScope": "public",
        },
        T.DiscoverResult,
    )
    assert result.capabilities.extensions == {"io.modelcontextprotocol/tasks": {}}
    round_trip(
        {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html"]}}, "roots": {}}, T.ClientCapabilities
    )


def test_input_required_and_retry_2026_07_28() -> None:
    answer = round_trip(
        {
            "resultType": "input_required",
            "inputRequests": {
                "who": {
                    "method": "elicitation/create",
                    "params": {"mode": "form", "message": "Name?", "requestedSchema": EMPTY_FORM},
                },
                "ask_model": {
                    "method": "sampling/createMessage",
                    "params": {
                        "messages": [{"role": "user", "content": {"type": "text", "text": "2+2"}}],
                        "maxTokens": 5,
                    },
                },
                "where": {"method": "roots/list"},
                "login": {
                    "method": "elicitation/create",
                    "params": {"mode": "url", "message": "Log in", "url": "https://x"},
                },
            },
            "requestState": "opaque-state.sig",
        },
        T.InputRequiredResult,
    )
    requests = answer.input_requests
    assert isinstance(requests["who"], T.ElicitRequest)
    assert isinstance(requests["who"].params, T.ElicitRequestFormParams)
    assert isinstance(requests["ask_model"], T.CreateMessageRequest)
    assert isinstance(requests["where"], T.ListRootsRequest) and requests["where"].params is None
    assert isinstance(requests["login"].params, T.ElicitRequestURLParams)
    round_trip({"resultType": "input_required", "requestState": "retry-now"}, T.InputRequiredResult)
    retry = round_trip(
        {
            "_meta": MODERN_META,
            "name": "book",
            "arguments": {"seat": "4A"},
            "inputResponses": {
                "who": {"action": "accept", "content": {"name": "Ada"}},
                "ask_model": {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"},
                "where": {"roots": [{"uri": "file:///home/ada"}]},
            },
            "requestState": "opaque-state.sig",
        },
        T.CallToolRequestParams,
    )
    responses = retry.input_responses
    assert isinstance(responses["who"], T.ElicitResult)
    assert isinstance(responses["ask_model"], T.CreateMessageResult)
    assert isinstance(responses["where"], T.ListRootsResult)
    for cls, extra in [(T.GetPromptRequestParams, {"name": "p"}), (T.ReadResourceRequestParams, {"uri": "mem://x"})]:
        round_trip({**extra, "inputResponses": {"a": {"action": "cancel"}}, "requestState": "s"}, cls)
    round_trip({"inputResponses": {"a": {"action": "decline"}}}, T.InputResponseRequestParams)


def test_subscriptions_2026_07_28() -> None:
    listen = round_trip(
        {
            "_meta": MODERN_META,
            "notifications": {
                "toolsListChanged": True,
                "promptsListChanged": False,
                "resourcesListChanged": True,
                "resourceSubscriptions": ["mem://a", "mem://b"],
                "taskIds": ["t-9"],
            },
        },
        T.SubscriptionsListenRequestParams,
    )
    assert listen.notifications.resource_subscriptions == ["mem://a", "mem://b"]
    round_trip(
        {"_meta": {"io.modelcontextprotocol/subscriptionId": 17}, "notifications": {"toolsListChanged": True}},
        T.SubscriptionsAcknowledgedNotificationParams,
    )
    round_trip(
        {"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": "sub-1"}},
        T.SubscriptionsListenResult,
    )
    round_trip({"_meta": {"io.modelcontextprotocol/subscriptionId": 17}}, T.NotificationParams)


def test_tasks_extension_2026_07_28() -> None:
    base = {
        "taskId": "t-9",
        "createdAt": "2026-08-01T00:00:00Z",
        "lastUpdatedAt": "2026-08-01T00:00:01Z",
        "ttlMs": None,
    }
    created = round_trip(
        {"resultType": "task", **base, "status": "working", "pollIntervalMs": 250}, T.ExtCreateTaskResult
    )
    assert created.ttl_ms is None and created.result_type == "task"
    waiting = round_trip(
        {
            "resultType": "complete",
            **base,
            "status": "input_required",
            "inputRequests": {
                "ok": {"method": "elicitation/create", "params": {"message": "Proceed?", "requestedSchema": EMPTY_FORM}}
            },
        },
        T.ExtGetTaskResult,
    )
    assert isinstance(waiting.input_requests["ok"], T.ElicitRequest)
    done = round_trip(
        {"resultType": "complete", **base, "status": "completed", "result": {"content": [], "isError": True}},
        T.ExtGetTaskResult,
    )
    assert done.result == {"content": [], "isError": True}
    failed = round_trip(
        {**base, "status": "failed", "error": {"code": -32603, "message": "boom", "data": {"trace": 1}}},
        T.ExtTaskNotificationParams,
    )
    assert failed.error == T.ErrorObject(code=-32603, message="boom", data={"trace": 1})
    round_trip({**base, "status": "cancelled"}, T.DetailedTask)
    round_trip(
        {"taskId": "t-9", "inputResponses": {"ok": {"action": "accept", "content": {}}}}, T.UpdateTaskRequestParams
    )
    assert T.TASKS_EXTENSION_ID == "io.modelcontextprotocol/tasks"


def test_error_data() -> None:
    round_trip({"supported": ["2026-07-28"], "requested": "2027-01-01"}, T.UnsupportedProtocolVersionErrorData)
    missing = round_trip(
        {"requiredCapabilities": {"elicitation": {"url": {}}}}, T.MissingRequiredClientCapabilityErrorData
    )
    assert missing.required_capabilities.elicitation == T.ElicitationCapability(url={})
    round_trip(
        {"elicitations": [{"mode": "url", "message": "Pay", "url": "https://pay", "elicitationId": "e-2"}]},
        T.URLElicitationRequiredErrorData,
    )
    round_trip({"code": -32022, "message": "Unsupported protocol version"}, T.ErrorObject)


# --- forward compatibility: unknown fields, unknown content ----------------------------------------------------


def test_unknown_fields_are_kept_at_every_level() -> None:
    data = {
        "content": [
            {"type": "text", "text": "hi", "x-new": {"nested": [1, 2]}},
            {"type": "resource", "resource": {"uri": "mem://a", "text": "a", "etag": "W/1"}, "later": True},
        ],
        "isError": False,
        "futureField": None,
        "_meta": {"a": 1},
    }
    result = round_trip(data, T.CallToolResult, exact=False)
    assert result.extra == {"futureField": None}
    assert result.content[0].extra == {"x-new": {"nested": [1, 2]}}
    assert result.content[1].resource.extra == {"etag": "W/1"}


def test_unknown_content_is_written_back_verbatim() -> None:
    block = {"type": "video", "uri": "mem://v", "frames": [{"t": 0}], "_meta": {"k": None}}
    result = from_wire({"content": [block, {"type": "text", "text": "x"}]}, T.CallToolResult)
    unknown = result.content[0]
    assert isinstance(unknown, T.UnknownContent) and unknown.type == "video"
    assert to_wire(result)["content"][0] is block
    assert json.dumps(to_wire(result)["content"][0]) == json.dumps(block)
    sampled = from_wire({"role": "user", "content": {"type": "thinking", "text": "hmm"}}, T.SamplingMessage)
    assert isinstance(sampled.content, T.UnknownContent)
    # Unknown input requests are kept the same way.
    odd = {
        "resultType": "input_required",
        "inputRequests": {"x": {"method": "payments/authorize", "params": {"amount": 5}}},
    }
    parsed = from_wire(odd, T.InputRequiredResult)
    assert isinstance(parsed.input_requests["x"], T.UnknownInputRequest)
    assert to_wire(parsed) == odd


def test_none_is_omitted_and_meta_is_kept() -> None:
    text = T.TextContent(text="hi", annotations=None, meta={"k": 1})
    assert to_wire(text) == {"type": "text", "text": "hi", "_meta": {"k": 1}}
    assert to_wire(T.CallToolResult(content=[], is_error=False)) == {"content": [], "isError": False}
    assert to_wire(T.Implementation(name="n", version="1")) == {"name": "n", "version": "1"}
    extra_wins_nothing = T.TextContent(text="a", extra={"text": "b", "z": 1})
    assert to_wire(extra_wins_nothing) == {"type": "text", "text": "a", "z": 1}


# --- validation and errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [True, False, None, 1.5, [1], {"id": 1}])
def test_request_ids_and_progress_tokens_reject_non_ids(bad: Any) -> None:
    with pytest.raises(WireFormatError) as info:
        from_wire({"requestId": bad}, T.CancelledNotificationParams) if bad is not None else from_wire(
            {"progressToken": bad, "progress": 1}, T.ProgressNotificationParams
        )
    assert info.value.errors[0].startswith("expected string or int @ $.")


def test_error_message_for_a_missing_nested_field() -> None:
    with pytest.raises(WireFormatError) as info:
        from_wire({"ref": {"type": "ref/prompt"}, "argument": {"name": "x", "value": "y"}}, T.CompleteRequestParams)
    assert str(info.value) == "missing required field @ $.ref.name"
    assert info.value.errors == ["missing required field @ $.ref.name"]


def test_error_message_for_a_wrong_type() -> None:
    with pytest.raises(WireFormatError) as info:
        from_wire({"completion": {"values": [], "total": "12"}}, T.CompleteResult)
    assert str(info.value) == "expected int @ $.completion.total"


def test_error_paths_use_wire_names_indices_and_keys() -> None:
    data = {
        "content": [{"type": "text", "text": "ok"}, {"type": "image", "data": 5}],
        "isError": "no",
    }
    with pytest.raises(WireFormatError) as info:
        from_wire(data, T.CallToolResult)
    assert info.value.errors == [
        "expected string @ $.content[1].data",
        "missing required field @ $.content[1].mimeType",
        "expected boolean @ $.isError",
    ]
    with pytest.raises(WireFormatError) as info:
        from_wire({"name": "t", "inputResponses": {"my key": {"action": "later"}}}, T.CallToolRequestParams)
    assert info.value.errors == ["expected one of 'accept', 'decline', 'cancel' @ $.inputResponses['my key'].action"]
    with pytest.raises(WireFormatError) as info:
        from_wire({"name": "p", "arguments": {"n": 1}}, T.GetPromptRequestParams)
    assert info.value.errors == ["expected string @ $.arguments.n"]
    with pytest.raises(WireFormatError) as info:
        from_wire({"resources": [{"uri": "u", "name": "n", "icons": "a.png"}]}, T.ListResourcesResult)
    assert info.value.errors == ["expected array @ $.resources[0].icons"]
    with pytest.raises(WireFormatError) as info:
        from_wire({"uri": "u", "contents": [{"uri": "u"}]}, T.ReadResourceResult)
    assert info.value.errors == ["expected a text or blob field @ $.contents[0]"]


def test_no_coercion_of_primitives() -> None:
    for data, message in [
        ({"name": 5, "version": "1"}, "expected string @ $.name"),
        ({"name": "n", "version": "1", "icons": [{"src": None}]}, "expected string @ $.icons[0].src"),
    ]:
        with pytest.raises(WireFormatError) as info:
            from_wire(data, T.Implementation)
        assert str(info.value) == message
    with pytest.raises(WireFormatError, match=r"expected number @ \$\.progress"):
        from_wire({"progressToken": 1, "progress": "50"}, T.ProgressNotificationParams)
    with pytest.raises(WireFormatError, match=r"expected int @ \$\.maxTokens"):
        from_wire({"messages": [], "maxTokens": True}, T.CreateMessageRequestParams)
    with pytest.raises(WireFormatError, match=r"expected array @ \$\.stopSequences"):
        from_wire({"messages": [], "maxTokens": 1, "stopSequences": "END"}, T.CreateMessageRequestParams)


def test_union_dispatch_errors() -> None:
    with pytest.raises(WireFormatError, match=r"missing required field @ \$\.content\[0\]\.type"):
        from_wire({"content": [{"text": "no tag"}]}, T.CallToolResult)
    with pytest.raises(WireFormatError, match=r"expected 'form' or 'url' @ \$\.mode"):
        from_wire({"mode": "voice", "message": "m"}, T.ElicitRequestParams)
    with pytest.raises(WireFormatError, match=r"expected 'ref/prompt' or 'ref/resource' @ \$\.ref\.type"):
        from_wire({"ref": {"type": "ref/tool"}, "argument": {"name": "a", "value": "b"}}, T.CompleteRequestParams)
    with pytest.raises(WireFormatError, match=r"expected object @ \$\.content\[0\]"):
        from_wire({"content": ["text"]}, T.CallToolResult)


def test_absent_params() -> None:
    assert from_wire(None, T.PaginatedRequestParams) == T.PaginatedRequestParams()
    assert from_wire(None, T.NotificationParams) == T.NotificationParams()
    with pytest.raises(WireFormatError, match=r"missing required field @ \$\.name"):
        from_wire(None, T.CallToolRequestParams)
    with pytest.raises(WireFormatError, match=r"expected object @ \$$"):
        from_wire([1, 2], T.PaginatedRequestParams)


def test_params_from_wire_raises_invalid_params() -> None:
    with pytest.raises(McpError) as info:
        params_from_wire({"arguments": {"city": "Oslo"}, "task": {"ttl": "soon"}}, T.CallToolRequestParams)
    error = info.value
    assert error.code == INVALID_PARAMS
    assert error.message == "Invalid params: missing required field @ $.name; expected int @ $.task.ttl"
    assert error.data == {"errors": ["missing required field @ $.name", "expected int @ $.task.ttl"]}
    assert params_from_wire({"name": "x"}, T.CallToolRequestParams) == T.CallToolRequestParams(name="x")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)
TARGETS = [
    T.CallToolResult,
    T.CallToolRequestParams,
    T.InitializeRequestParams,
    T.CreateMessageRequestParams,
    T.InputRequiredResult,
    T.ElicitRequestParams,
    T.ContentBlock,
    T.ExtGetTaskResult,
]


@settings(max_examples=300, deadline=None)
@given(data=JSON, target=st.sampled_from(TARGETS))
def test_garbage_raises_only_wire_format_error(data: Any, target: Any) -> None:
    try:
        obj = from_wire(data, target)
    except WireFormatError as exc:
        assert exc.errors and all(" @ $" in e for e in exc.errors)
    else:
        # Explicit nulls for optional fields are not preserved, so compare the re-read object, not the dicts.
        assert from_wire(to_wire(obj), target) == obj


@settings(max_examples=200, deadline=None)
@given(
    extra=st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: k not in ("type", "text", "annotations", "_meta")),
        JSON,
        max_size=4,
    )
)
def test_unknown_keys_round_trip(extra: dict[str, Any]) -> None:
    data = {"type": "text", "text": "x", **extra}
    obj = from_wire(data, T.TextContent)
    assert obj.extra == (extra or None)
    assert to_wire(obj) == data


# --- the method registry ---------------------------------------------------------------------------------------

SECTION_2_METHODS = {
    "initialize", "server/discover", "ping", "tools/list", "tools/call", "prompts/list", "prompts/get",
    "resources/list", "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
    "subscriptions/listen", "completion/complete", "logging/setLevel", "sampling/createMessage", "roots/list",
    "elicitation/create", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "notifications/initialized",
    "notifications/cancelled", "notifications/progress", "notifications/roots/list_changed",
    "notifications/message", "notifications/tools/list_changed", "notifications/prompts/list_changed",
    "notifications/resources/list_changed", "notifications/resources/updated",
    "notifications/elicitation/complete", "notifications/tasks/status", "notifications/subscriptions/acknowledged",
}  # fmt: skip


def test_registry_covers_every_method() -> None:
    assert set(METHODS) == SECTION_2_METHODS
    for name, spec in {**METHODS, **TASKS_EXTENSION_METHODS}.items():
        assert isinstance(spec, MethodSpec) and spec.method == name
        assert spec.revisions and spec.revisions <= set(V.KNOWN_VERSIONS)
        # Every params and result type can build its hooks (an error about the empty dict is fine).
        for cls in (spec.params_type, spec.result_type):
            if cls is not None:
                try:
                    from_wire({}, cls)
                except WireFormatError:
                    pass


def test_registry_task_results_differ_between_core_and_extension() -> None:
    # Which revision has which method is checked against the schemas in test_method_table.py.
    assert TASKS_EXTENSION_METHODS["tasks/get"].result_type is T.ExtGetTaskResult
    assert METHODS["tasks/get"].result_type is T.GetTaskResult


def test_registry_types_round_trip_a_typical_message() -> None:
    spec = METHODS["tools/call"]
    params = params_from_wire({"name": "echo", "arguments": {"s": "hi"}}, spec.params_type)
    assert isinstance(params, T.CallToolRequestParams)
    result = from_wire({"content": [{"type": "text", "text": "hi"}]}, spec.result_type)
    assert to_wire(result) == {"content": [{"type": "text", "text": "hi"}]}
