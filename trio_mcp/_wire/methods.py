"""The JSON-RPC methods of every protocol revision, as data.

``METHODS`` maps each core method name to a :class:`MethodSpec`: who sends it, which classes its params and result
are read into, and in which revisions it exists as a JSON-RPC message. Methods of the
``io.modelcontextprotocol/tasks`` extension (2026-07-28+) reuse names of the 2025-11-25 core task methods with
other result types, so they live in a separate table, ``TASKS_EXTENSION_METHODS``.
"""

from typing import Any, Final, Literal

import attrs

from ..types import (
    CallToolRequestParams,
    CallToolResult,
    CancelledNotificationParams,
    CancelTaskRequestParams,
    CancelTaskResult,
    CompleteRequestParams,
    CompleteResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    DiscoverResult,
    ElicitationCompleteNotificationParams,
    ElicitRequestParams,
    ElicitResult,
    EmptyResult,
    ExtGetTaskResult,
    ExtTaskNotificationParams,
    GetPromptRequestParams,
    GetPromptResult,
    GetTaskPayloadRequestParams,
    GetTaskPayloadResult,
    GetTaskRequestParams,
    GetTaskResult,
    InitializeRequestParams,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListRootsResult,
    ListTasksResult,
    ListToolsResult,
    LoggingMessageNotificationParams,
    NotificationParams,
    PaginatedRequestParams,
    ProgressNotificationParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestParams,
    ResourceUpdatedNotificationParams,
    SetLevelRequestParams,
    SubscribeRequestParams,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    TaskStatusNotificationParams,
    UnsubscribeRequestParams,
    UpdateTaskRequestParams,
)
from .versions import HANDSHAKE_VERSIONS, KNOWN_VERSIONS, V2025_06_18, V2025_11_25, V2026_07_28

__all__ = [
    "MethodSpec",
    "METHODS",
    "TASKS_EXTENSION_METHODS",
    "ALL_REVISIONS",
    "HANDSHAKE_REVISIONS",
    "MODERN_REVISIONS",
    "methods_for",
]

ALL_REVISIONS: Final = frozenset(KNOWN_VERSIONS)
HANDSHAKE_REVISIONS: Final = frozenset(HANDSHAKE_VERSIONS)
MODERN_REVISIONS: Final = frozenset({V2026_07_28})
_NONE: Final[frozenset[str]] = frozenset()


@attrs.frozen(kw_only=True)
class MethodSpec:
    """One JSON-RPC method: its direction, wire types, and the revisions where it is a JSON-RPC message.

    ``params_type`` may be a union alias (``elicitation/create``); pass it to ``from_wire`` as it is.
    ``result_type`` is the ordinary answer. The alternatives are chosen by context, not by method:
    ``InputRequiredResult`` (``resultType: "input_required"``, in ``input_required_revisions``),
    ``CreateTaskResult`` (2025-11-25, when the params carry ``task``) and ``ExtCreateTaskResult``
    (``resultType: "task"``, tasks extension). ``embedded_revisions`` lists the revisions where the method exists
    only as an input request inside an ``InputRequiredResult``.
    """

    method: str
    kind: Literal["request", "notification"]
    sender: Literal["client", "server", "both"]
    params_type: Any
    result_type: Any | None
    revisions: frozenset[str]
    input_required_revisions: frozenset[str] = _NONE
    embedded_revisions: frozenset[str] = _NONE


def _request(
    method: str,
    sender: Literal["client", "server", "both"],
    params_type: Any,
    result_type: Any,
    revisions: frozenset[str],
    *,
    input_required: frozenset[str] = _NONE,
    embedded: frozenset[str] = _NONE,
) -> MethodSpec:
    return MethodSpec(
        method=method,
        kind="request",
        sender=sender,
        params_type=params_type,
        result_type=result_type,
        revisions=revisions,
        input_required_revisions=input_required,
        embedded_revisions=embedded,
    )


def _notification(
    method: str, sender: Literal["client", "server", "both"], params_type: Any, revisions: frozenset[str]
) -> MethodSpec:
    return MethodSpec(
        method=method,
        kind="notification",
        sender=sender,
        params_type=params_type,
        result_type=None,
        revisions=revisions,
    )


_FROM_2025_06_18_TO_2025_11_25: Final = frozenset({V2025_06_18, V2025_11_25})
_ONLY_2025_11_25: Final = frozenset({V2025_11_25})

_SPECS: Final = (
    # lifecycle
    _request("initialize", "client", InitializeRequestParams, InitializeResult, HANDSHAKE_REVISIONS),
    _request("server/discover", "client", RequestParams, DiscoverResult, MODERN_REVISIONS),
    _request("ping", "both", RequestParams, EmptyResult, HANDSHAKE_REVISIONS),
    # tools
    _request("tools/list", "client", PaginatedRequestParams, ListToolsResult, ALL_REVISIONS),
    _request(
        "tools/call", "client", CallToolRequestParams, CallToolResult, ALL_REVISIONS, input_required=MODERN_REVISIONS
    ),
    # prompts
    _request("prompts/list", "client", PaginatedRequestParams, ListPromptsResult, ALL_REVISIONS),
    _request(
        "prompts/get",
        "client",
        GetPromptRequestParams,
        GetPromptResult,
        ALL_REVISIONS,
        input_required=MODERN_REVISIONS,
    ),
    # resources
    _request("resources/list", "client", PaginatedRequestParams, ListResourcesResult, ALL_REVISIONS),
    _request("resources/templates/list", "client", PaginatedRequestParams, ListResourceTemplatesResult, ALL_REVISIONS),
    _request(
        "resources/read",
        "client",
        ReadResourceRequestParams,
        ReadResourceResult,
        ALL_REVISIONS,
        input_required=MODERN_REVISIONS,
    ),
    _request("resources/subscribe", "client", SubscribeRequestParams, EmptyResult, HANDSHAKE_REVISIONS),
    _request("resources/unsubscribe", "client", UnsubscribeRequestParams, EmptyResult, HANDSHAKE_REVISIONS),
    _request(
        "subscriptions/listen",
        "client",
        SubscriptionsListenRequestParams,
        SubscriptionsListenResult,
        MODERN_REVISIONS,
    ),
    # completion and logging
    _request("completion/complete", "client", CompleteRequestParams, CompleteResult, ALL_REVISIONS),
    _request("logging/setLevel", "client", SetLevelRequestParams, EmptyResult, HANDSHAKE_REVISIONS),
    # client features: server-sent requests up to 2025-11-25, embedded input requests in 2026-07-28
    _request(
        "sampling/createMessage",
        "server",
        CreateMessageRequestParams,
        CreateMessageResult,
        HANDSHAKE_REVISIONS,
        embedded=MODERN_REVISIONS,
    ),
    _request("roots/list", "server", RequestParams, ListRootsResult, HANDSHAKE_REVISIONS, embedded=MODERN_REVISIONS),
    _request(
        "elicitation/create",
        "server",
        ElicitRequestParams,
        ElicitResult,
        _FROM_2025_06_18_TO_2025_11_25,
        embedded=MODERN_REVISIONS,
    ),
    # 2025-11-25 core tasks (experimental); either side can host tasks
    _request("tasks/get", "both", GetTaskRequestParams, GetTaskResult, _ONLY_2025_11_25),
    _request("tasks/result", "both", GetTaskPayloadRequestParams, GetTaskPayloadResult, _ONLY_2025_11_25),
    _request("tasks/list", "both", PaginatedRequestParams, ListTasksResult, _ONLY_2025_11_25),
    _request("tasks/cancel", "both", CancelTaskRequestParams, CancelTaskResult, _ONLY_2025_11_25),
    # notifications
    _notification("notifications/initialized", "client", NotificationParams, HANDSHAKE_REVISIONS),
    _notification("notifications/cancelled", "both", CancelledNotificationParams, ALL_REVISIONS),
    _notification("notifications/progress", "both", ProgressNotificationParams, ALL_REVISIONS),
    _notification("notifications/roots/list_changed", "client", NotificationParams, HANDSHAKE_REVISIONS),
    _notification("notifications/message", "server", LoggingMessageNotificationParams, ALL_REVISIONS),
    _notification("notifications/tools/list_changed", "server", NotificationParams, ALL_REVISIONS),
    _notification("notifications/prompts/list_changed", "server", NotificationParams, ALL_REVISIONS),
    _notification("notifications/resources/list_changed", "server", NotificationParams, ALL_REVISIONS),
    _notification("notifications/resources/updated", "server", ResourceUpdatedNotificationParams, ALL_REVISIONS),
    _notification(
        "notifications/elicitation/complete", "server", ElicitationCompleteNotificationParams, _ONLY_2025_11_25
    ),
    _notification("notifications/tasks/status", "both", TaskStatusNotificationParams, _ONLY_2025_11_25),
    _notification(
        "notifications/subscriptions/acknowledged",
        "server",
        SubscriptionsAcknowledgedNotificationParams,
        MODERN_REVISIONS,
    ),
)

#: Every method of the core protocol, 2024-11-05 .. 2026-07-28.
METHODS: Final[dict[str, MethodSpec]] = {spec.method: spec for spec in _SPECS}

#: Methods of the ``io.modelcontextprotocol/tasks`` extension; valid only when both sides declared it.
TASKS_EXTENSION_METHODS: Final[dict[str, MethodSpec]] = {
    spec.method: spec
    for spec in (
        _request("tasks/get", "client", GetTaskRequestParams, ExtGetTaskResult, MODERN_REVISIONS),
        _request("tasks/update", "client", UpdateTaskRequestParams, EmptyResult, MODERN_REVISIONS),
        _request("tasks/cancel", "client", CancelTaskRequestParams, EmptyResult, MODERN_REVISIONS),
        _notification("notifications/tasks", "server", ExtTaskNotificationParams, MODERN_REVISIONS),
    )
}


def methods_for(version: str) -> dict[str, MethodSpec]:
    """The core methods that exist as JSON-RPC messages in ``version``."""
    return {name: spec for name, spec in METHODS.items() if version in spec.revisions}
