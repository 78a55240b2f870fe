"""The JSON-RPC methods of every protocol revision, as data: the one table the client, the server, the
``Mcp-Name`` header codec and the command line read.

``METHODS`` maps each core method name to a :class:`MethodSpec`: who sends it, which classes its params and result
are read into, in which revisions it exists as a JSON-RPC message, which capability its receiver declares and
which param names it in the ``Mcp-Name`` header. Methods of the ``io.modelcontextprotocol/tasks`` extension
(2026-07-28+) reuse names of the 2025-11-25 core task methods with other result types, so they live in a
separate table, ``TASKS_EXTENSION_METHODS``; ``spec_for`` reads both.
"""

from collections.abc import Callable
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
from .features import Feature, has
from .versions import KNOWN_VERSIONS, LEGACY_VERSIONS, MODERN_VERSIONS

__all__ = [
    "INPUT_REQUIRED_METHODS",
    "METHODS",
    "TASKS_EXTENSION_METHODS",
    "MethodSpec",
    "Side",
    "declared",
    "methods_for",
    "send_refusal",
    "spec_for",
    "task_requests",
]

Side = Literal["client", "server"]

_ALL: Final = frozenset(KNOWN_VERSIONS)
_HANDSHAKE: Final = frozenset(LEGACY_VERSIONS)
_MODERN: Final = frozenset(MODERN_VERSIONS)
_NONE: Final[frozenset[str]] = frozenset()
#: Where every ``task_capability`` path starts.
_TASK_REQUESTS: Final = ("tasks", "requests")


@attrs.frozen(kw_only=True)
class MethodSpec:
    """One JSON-RPC method: its wire types, which side sends it in which revisions, and what its receiver offers.

    ``params_type`` may be a union alias (``elicitation/create``); pass it to ``from_wire`` as it is.
    ``result_type`` is the ordinary answer (None: a notification). In ``input_required_revisions`` a server may
    answer with an ``InputRequiredResult`` instead (2026-07-28: the multi round-trip requests). The other
    alternatives are chosen by context, not by method: ``CreateTaskResult`` (2025-11-25, when the params carry
    ``task``) and ``ExtCreateTaskResult`` (tasks extension).

    ``by_client`` and ``by_server`` are the revisions where each side sends the method as a JSON-RPC message;
    ``embedded_revisions`` those where a server asks for it only as an input request inside an
    ``InputRequiredResult``. ``capability`` is the path of the capability the receiver declares when it serves
    the method (``("resources", "subscribe")``: ``capabilities.resources.subscribe``); a revision outside
    ``capability_revisions`` has no such capability, so a sender cannot check it there. ``name_param`` is the
    param the 2026-07-28 ``Mcp-Name`` request header mirrors; ``cache_hint_revisions`` are those whose complete
    results carry caching hints (``ttlMs``, ``cacheScope``). ``task_capability`` is where a receiver declares
    that it runs the request as a task when asked to (``capabilities.tasks.requests.tools.call``), in the
    revisions ``task_capability_revisions`` (2025-11-25, the one revision with a ``tasks`` capability).
    """

    method: str
    params_type: Any
    result_type: Any | None
    by_client: frozenset[str] = _NONE
    by_server: frozenset[str] = _NONE
    embedded_revisions: frozenset[str] = _NONE
    capability: tuple[str, ...] | None = None
    capability_revisions: frozenset[str] = _ALL
    name_param: str | None = None
    cache_hint_revisions: frozenset[str] = _NONE
    input_required_revisions: frozenset[str] = _NONE
    task_capability: tuple[str, ...] | None = None
    task_capability_revisions: frozenset[str] = _NONE
    #: Every revision where the method is a JSON-RPC message, sent by either side.
    revisions: frozenset[str] = attrs.field(init=False)

    @revisions.default
    def _either_side(self) -> frozenset[str]:
        return self.by_client | self.by_server

    def sent_by(self, side: Side, version: str) -> bool:
        """True when ``side`` sends this method as a JSON-RPC message on ``version``."""
        return version in (self.by_client if side == "client" else self.by_server)

    def capability_in(self, version: str) -> tuple[str, ...] | None:
        """The capability a sender checks before sending this method on ``version`` (None: nothing to check)."""
        return self.capability if version in self.capability_revisions else None

    def task_capability_in(self, version: str) -> tuple[str, ...] | None:
        """Where a receiver on ``version`` declares that it runs this request as a task (None: it cannot)."""
        return self.task_capability if version in self.task_capability_revisions else None

    def asked_in(self, version: str) -> bool:
        """True when a server may ask a client for this method on ``version``, by request or embedded."""
        return version in self.by_server or version in self.embedded_revisions


def _request(method: str, params_type: Any, result_type: Any, **facts: Any) -> MethodSpec:
    return MethodSpec(method=method, params_type=params_type, result_type=result_type, **facts)


def _notification(
    method: str, params_type: Any, *, by_client: frozenset[str] = _NONE, by_server: frozenset[str] = _NONE
) -> MethodSpec:
    return MethodSpec(
        method=method, params_type=params_type, result_type=None, by_client=by_client, by_server=by_server
    )


def _having(feature: Feature) -> frozenset[str]:
    return frozenset(v for v in KNOWN_VERSIONS if has(v, feature))


_TASKS: Final = _having(Feature.TASKS)
#: The revisions whose servers declare ``completions`` (2024-11-05 has the method but no capability for it).
_WITH_COMPLETIONS: Final = _having(Feature.COMPLETIONS)

_SPECS: Final = (
    # lifecycle
    _request("initialize", InitializeRequestParams, InitializeResult, by_client=_HANDSHAKE),
    _request("server/discover", RequestParams, DiscoverResult, by_client=_MODERN, cache_hint_revisions=_MODERN),
    _request("ping", RequestParams, EmptyResult, by_client=_HANDSHAKE, by_server=_HANDSHAKE),
    # tools
    _request(
        "tools/list",
        PaginatedRequestParams,
        ListToolsResult,
        by_client=_ALL,
        capability=("tools",),
        cache_hint_revisions=_MODERN,
    ),
    _request(
        "tools/call",
        CallToolRequestParams,
        CallToolResult,
        by_client=_ALL,
        capability=("tools",),
        name_param="name",
        input_required_revisions=_MODERN,
        task_capability=("tasks", "requests", "tools", "call"),
        task_capability_revisions=_TASKS,
    ),
    # prompts
    _request(
        "prompts/list",
        PaginatedRequestParams,
        ListPromptsResult,
        by_client=_ALL,
        capability=("prompts",),
        cache_hint_revisions=_MODERN,
    ),
    _request(
        "prompts/get",
        GetPromptRequestParams,
        GetPromptResult,
        by_client=_ALL,
        capability=("prompts",),
        name_param="name",
        input_required_revisions=_MODERN,
    ),
    # resources
    _request(
        "resources/list",
        PaginatedRequestParams,
        ListResourcesResult,
        by_client=_ALL,
        capability=("resources",),
        cache_hint_revisions=_MODERN,
    ),
    _request(
        "resources/templates/list",
        PaginatedRequestParams,
        ListResourceTemplatesResult,
        by_client=_ALL,
        capability=("resources",),
        cache_hint_revisions=_MODERN,
    ),
    _request(
        "resources/read",
        ReadResourceRequestParams,
        ReadResourceResult,
        by_client=_ALL,
        capability=("resources",),
        name_param="uri",
        cache_hint_revisions=_MODERN,
        input_required_revisions=_MODERN,
    ),
    _request(
        "resources/subscribe",
        SubscribeRequestParams,
        EmptyResult,
        by_client=_HANDSHAKE,
        capability=("resources", "subscribe"),
    ),
    _request(
        "resources/unsubscribe",
        UnsubscribeRequestParams,
        EmptyResult,
        by_client=_HANDSHAKE,
        capability=("resources", "subscribe"),
    ),
    _request("subscriptions/listen", SubscriptionsListenRequestParams, SubscriptionsListenResult, by_client=_MODERN),
    # completion and logging
    _request(
        "completion/complete",
        CompleteRequestParams,
        CompleteResult,
        by_client=_ALL,
        capability=("completions",),
        capability_revisions=_WITH_COMPLETIONS,
    ),
    _request("logging/setLevel", SetLevelRequestParams, EmptyResult, by_client=_HANDSHAKE, capability=("logging",)),
    # client features: server-sent requests up to 2025-11-25, embedded input requests in 2026-07-28
    _request(
        "sampling/createMessage",
        CreateMessageRequestParams,
        CreateMessageResult,
        by_server=_HANDSHAKE,
        embedded_revisions=_MODERN,
        capability=("sampling",),
        task_capability=("tasks", "requests", "sampling", "createMessage"),
        task_capability_revisions=_TASKS,
    ),
    _request(
        "roots/list",
        RequestParams,
        ListRootsResult,
        by_server=_HANDSHAKE,
        embedded_revisions=_MODERN,
        capability=("roots",),
    ),
    _request(
        "elicitation/create",
        ElicitRequestParams,
        ElicitResult,
        by_server=_having(Feature.ELICITATION) & _HANDSHAKE,
        embedded_revisions=_MODERN,
        capability=("elicitation",),
        task_capability=("tasks", "requests", "elicitation", "create"),
        task_capability_revisions=_TASKS,
    ),
    # 2025-11-25 core tasks (experimental); either side can host tasks
    _request(
        "tasks/get", GetTaskRequestParams, GetTaskResult, by_client=_TASKS, by_server=_TASKS, capability=("tasks",)
    ),
    _request(
        "tasks/result",
        GetTaskPayloadRequestParams,
        GetTaskPayloadResult,
        by_client=_TASKS,
        by_server=_TASKS,
        capability=("tasks",),
    ),
    _request(
        "tasks/list",
        PaginatedRequestParams,
        ListTasksResult,
        by_client=_TASKS,
        by_server=_TASKS,
        capability=("tasks", "list"),
    ),
    _request(
        "tasks/cancel",
        CancelTaskRequestParams,
        CancelTaskResult,
        by_client=_TASKS,
        by_server=_TASKS,
        capability=("tasks", "cancel"),
    ),
    # notifications (2026-07-28: no server requests, so a client sends no progress)
    _notification("notifications/initialized", NotificationParams, by_client=_HANDSHAKE),
    _notification("notifications/cancelled", CancelledNotificationParams, by_client=_ALL, by_server=_ALL),
    _notification("notifications/progress", ProgressNotificationParams, by_client=_HANDSHAKE, by_server=_ALL),
    _notification("notifications/roots/list_changed", NotificationParams, by_client=_HANDSHAKE),
    _notification("notifications/message", LoggingMessageNotificationParams, by_server=_ALL),
    _notification("notifications/tools/list_changed", NotificationParams, by_server=_ALL),
    _notification("notifications/prompts/list_changed", NotificationParams, by_server=_ALL),
    _notification("notifications/resources/list_changed", NotificationParams, by_server=_ALL),
    _notification("notifications/resources/updated", ResourceUpdatedNotificationParams, by_server=_ALL),
    _notification(
        "notifications/elicitation/complete",
        ElicitationCompleteNotificationParams,
        by_server=_having(Feature.URL_ELICITATION) & _HANDSHAKE,
    ),
    _notification("notifications/tasks/status", TaskStatusNotificationParams, by_client=_TASKS, by_server=_TASKS),
    _notification(
        "notifications/subscriptions/acknowledged", SubscriptionsAcknowledgedNotificationParams, by_server=_MODERN
    ),
)

#: Every method of the core protocol, 2024-11-05 .. 2026-07-28.
METHODS: Final[dict[str, MethodSpec]] = {spec.method: spec for spec in _SPECS}

#: The requests a server may answer with an ``InputRequiredResult`` (2026-07-28), from the table.
INPUT_REQUIRED_METHODS: Final = frozenset(name for name, spec in METHODS.items() if spec.input_required_revisions)

#: Methods of the ``io.modelcontextprotocol/tasks`` extension; valid only when both sides declared it.
TASKS_EXTENSION_METHODS: Final[dict[str, MethodSpec]] = {
    spec.method: spec
    for spec in (
        _request("tasks/get", GetTaskRequestParams, ExtGetTaskResult, by_client=_MODERN, name_param="taskId"),
        _request("tasks/update", UpdateTaskRequestParams, EmptyResult, by_client=_MODERN, name_param="taskId"),
        _request("tasks/cancel", CancelTaskRequestParams, EmptyResult, by_client=_MODERN, name_param="taskId"),
        _notification("notifications/tasks", ExtTaskNotificationParams, by_server=_MODERN),
    )
}


def methods_for(version: str) -> dict[str, MethodSpec]:
    """The core methods that exist as JSON-RPC messages in ``version``."""
    return {name: spec for name, spec in METHODS.items() if version in spec.revisions}


def spec_for(method: str, version: str) -> MethodSpec | None:
    """``method`` as a JSON-RPC message of ``version`` (a tasks extension method where the core has none of that
    name), or None where ``version`` has no such message."""
    spec = METHODS.get(method)
    if spec is not None and version in spec.revisions:
        return spec
    spec = TASKS_EXTENSION_METHODS.get(method)
    return spec if spec is not None and version in spec.revisions else None


def task_requests(
    version: str, receiver: Side, serves: Callable[[MethodSpec], bool] = lambda spec: True
) -> dict[str, Any]:
    """The ``tasks.requests`` object ``receiver`` declares on ``version``: each request its peer sends there that
    it may be asked to run as a task (and ``serves``), nested as in its ``task_capability`` path
    (``{"tools": {"call": {}}}``)."""
    sender: Side = "client" if receiver == "server" else "server"
    requests: dict[str, Any] = {}
    for spec in METHODS.values():
        path = spec.task_capability_in(version)
        if path is not None and spec.sent_by(sender, version) and serves(spec):
            node = requests
            for key in path[len(_TASK_REQUESTS) :]:
                node = node.setdefault(key, {})
    return requests


def declared(capabilities: Any, path: tuple[str, ...]) -> bool:
    """True when ``capabilities`` (a wire dict or a capabilities object) declares the capability at ``path``."""
    node = capabilities
    for key in path:
        node = node.get(key) if isinstance(node, dict) else getattr(node, key, None)
        if node is None or node is False:
            return False
    return True


def send_refusal(method: str, version: str, side: Side, peer_capabilities: Any) -> str | None:
    """Why ``side`` may not send the request ``method`` on ``version`` to a peer that declared
    ``peer_capabilities``, or None if it may (a method no revision defines is an extension's: it may)."""
    if method not in METHODS and method not in TASKS_EXTENSION_METHODS:
        return None
    spec = spec_for(method, version)
    if spec is None:
        return f"{method} does not exist on {version}"
    if spec.result_type is None:
        return f"{method} is a notification, not a request"
    if not spec.sent_by(side, version):
        return f"{method} is not sent by {side}s on {version}"
    path = spec.capability_in(version)
    if path is not None and not declared(peer_capabilities, path):
        peer = "server" if side == "client" else "client"
        return f"{method}: the {peer} did not declare the {'.'.join(path)!r} capability"
    return None
