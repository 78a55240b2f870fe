"""What each revision's ``schema.ts`` says about methods and capabilities, written down as data for the tests
that check the method table (``trio_mcp/_wire/methods.py``) and what the client and server do with it.

Read from ``schema/<revision>/schema.ts`` of the specification repository: the members of the
``ClientRequest``, ``ServerRequest``, ``ClientNotification`` and ``ServerNotification`` unions, and the keys of
``ServerCapabilities`` and ``ClientCapabilities``. 2026-07-28 has no ``ServerRequest``: a server asks for
sampling, roots and elicitation only inside an ``InputRequiredResult``. The tasks extension (SEP-2663) adds
client requests of its own on 2026-07-28; its ``Mcp-Name`` rule is in that SEP, the core one in the 2026-07-28
Streamable HTTP page.
"""

from __future__ import annotations

from typing import Final

REVISIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")

_CORE_CLIENT_REQUESTS: Final = frozenset(
    {
        "ping",
        "initialize",
        "completion/complete",
        "logging/setLevel",
        "prompts/get",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "tools/call",
        "tools/list",
    }
)
_TASK_REQUESTS: Final = frozenset({"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"})
_SERVER_REQUESTS: Final = frozenset({"ping", "sampling/createMessage", "roots/list"})
_CLIENT_NOTIFICATIONS: Final = frozenset(
    {
        "notifications/cancelled",
        "notifications/progress",
        "notifications/initialized",
        "notifications/roots/list_changed",
    }
)
_SERVER_NOTIFICATIONS: Final = frozenset(
    {
        "notifications/cancelled",
        "notifications/progress",
        "notifications/message",
        "notifications/resources/updated",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
    }
)

CLIENT_REQUESTS: Final[dict[str, frozenset[str]]] = {
    "2024-11-05": _CORE_CLIENT_REQUESTS,
    "2025-03-26": _CORE_CLIENT_REQUESTS,
    "2025-06-18": _CORE_CLIENT_REQUESTS,
    "2025-11-25": _CORE_CLIENT_REQUESTS | _TASK_REQUESTS,
    "2026-07-28": frozenset(
        {
            "server/discover",
            "completion/complete",
            "prompts/get",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "subscriptions/listen",
            "tools/call",
            "tools/list",
        }
    ),
}
SERVER_REQUESTS: Final[dict[str, frozenset[str]]] = {
    "2024-11-05": _SERVER_REQUESTS,
    "2025-03-26": _SERVER_REQUESTS,
    "2025-06-18": _SERVER_REQUESTS | {"elicitation/create"},
    "2025-11-25": _SERVER_REQUESTS | {"elicitation/create"} | _TASK_REQUESTS,
    "2026-07-28": frozenset(),
}
#: The requests a 2026-07-28 server asks for inside an ``InputRequiredResult`` (``InputRequest``).
EMBEDDED_REQUESTS: Final[dict[str, frozenset[str]]] = {
    **{revision: frozenset() for revision in REVISIONS[:-1]},
    "2026-07-28": frozenset({"sampling/createMessage", "roots/list", "elicitation/create"}),
}
CLIENT_NOTIFICATIONS: Final[dict[str, frozenset[str]]] = {
    "2024-11-05": _CLIENT_NOTIFICATIONS,
    "2025-03-26": _CLIENT_NOTIFICATIONS,
    "2025-06-18": _CLIENT_NOTIFICATIONS,
    "2025-11-25": _CLIENT_NOTIFICATIONS | {"notifications/tasks/status"},
    "2026-07-28": frozenset({"notifications/cancelled"}),
}
SERVER_NOTIFICATIONS: Final[dict[str, frozenset[str]]] = {
    "2024-11-05": _SERVER_NOTIFICATIONS,
    "2025-03-26": _SERVER_NOTIFICATIONS,
    "2025-06-18": _SERVER_NOTIFICATIONS,
    "2025-11-25": _SERVER_NOTIFICATIONS | {"notifications/elicitation/complete", "notifications/tasks/status"},
    "2026-07-28": _SERVER_NOTIFICATIONS | {"notifications/subscriptions/acknowledged"},
}
#: The client requests of the tasks extension (2026-07-28), each named by ``params.taskId`` in ``Mcp-Name``.
TASKS_EXTENSION_REQUESTS: Final = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})

SERVER_CAPABILITIES: Final[dict[str, frozenset[str]]] = {
    "2024-11-05": frozenset({"experimental", "logging", "prompts", "resources", "tools"}),
    "2025-03-26": frozenset({"experimental", "logging", "completions", "prompts", "resources", "tools"}),
    "2025-06-18": frozenset({"experimental", "logging", "completions", "prompts", "resources", "tools"}),
    "2025-11-25": frozenset({"experimental", "logging", "completions", "prompts", "resources", "tools", "tasks"}),
    "2026-07-28": frozenset({"experimental", "logging", "completions", "prompts", "resources", "tools", "extensions"}),
}
CLIENT_CAPABILITIES: Final[dict[str, frozenset[str]]] = {
    "2024-11-05": frozenset({"experimental", "roots", "sampling"}),
    "2025-03-26": frozenset({"experimental", "roots", "sampling"}),
    "2025-06-18": frozenset({"experimental", "roots", "sampling", "elicitation"}),
    "2025-11-25": frozenset({"experimental", "roots", "sampling", "elicitation", "tasks"}),
    "2026-07-28": frozenset({"experimental", "roots", "sampling", "elicitation", "extensions"}),
}
#: The capability (its path in the capabilities object) a receiver declares to serve each request, from each
#: feature's page ("Servers that support tools MUST declare the tools capability", ...).
REQUIRED_CAPABILITY: Final[dict[str, tuple[str, ...]]] = {
    "tools/list": ("tools",),
    "tools/call": ("tools",),
    "prompts/list": ("prompts",),
    "prompts/get": ("prompts",),
    "resources/list": ("resources",),
    "resources/templates/list": ("resources",),
    "resources/read": ("resources",),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "completion/complete": ("completions",),
    "logging/setLevel": ("logging",),
    "sampling/createMessage": ("sampling",),
    "roots/list": ("roots",),
    "elicitation/create": ("elicitation",),
    "tasks/get": ("tasks",),
    "tasks/result": ("tasks",),
    "tasks/list": ("tasks", "list"),
    "tasks/cancel": ("tasks", "cancel"),
}
#: 2026-07-28 Streamable HTTP: the requests whose ``Mcp-Name`` header carries a param, and which.
MCP_NAME: Final[dict[str, str]] = {
    "tools/call": "name",
    "resources/read": "uri",
    "prompts/get": "name",
    **{method: "taskId" for method in TASKS_EXTENSION_REQUESTS},
}


def every_method() -> frozenset[str]:
    """Every method any revision defines."""
    found: set[str] = set(TASKS_EXTENSION_REQUESTS)
    for table in (CLIENT_REQUESTS, SERVER_REQUESTS, CLIENT_NOTIFICATIONS, SERVER_NOTIFICATIONS):
        for methods in table.values():
            found |= methods
    return frozenset(found)


#: 2026-07-28 caching page: the requests whose complete results carry ``ttlMs`` and ``cacheScope`` (no earlier
#: revision has caching hints).
CACHE_HINTED: Final[dict[str, frozenset[str]]] = {
    **{revision: frozenset() for revision in REVISIONS[:-1]},
    "2026-07-28": frozenset(
        {
            "server/discover",
            "tools/list",
            "prompts/list",
            "resources/list",
            "resources/templates/list",
            "resources/read",
        }
    ),
}

#: 2025-11-25 ``tasks.requests`` of each side's capabilities: where a receiver says it runs a request as a task
#: (no other revision has a ``tasks`` capability).
TASK_CAPABILITY: Final[dict[str, tuple[str, ...]]] = {
    "tools/call": ("tasks", "requests", "tools", "call"),
    "sampling/createMessage": ("tasks", "requests", "sampling", "createMessage"),
    "elicitation/create": ("tasks", "requests", "elicitation", "create"),
}

#: The requests whose result may be an ``InputRequiredResult`` instead of their own: 2026-07-28 types the results of
#: ``ReadResourceResultResponse``, ``GetPromptResultResponse`` and ``CallToolResultResponse`` as
#: ``<own result> | InputRequiredResult``, and no other response; no earlier schema has ``InputRequiredResult``.
INPUT_REQUIRED: Final[dict[str, frozenset[str]]] = {
    **{revision: frozenset() for revision in REVISIONS[:-1]},
    "2026-07-28": frozenset({"resources/read", "prompts/get", "tools/call"}),
}
