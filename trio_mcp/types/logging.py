"""Logging: ``logging/setLevel`` (legacy revisions) and ``notifications/message``."""

from typing import Any, Final, TypeAlias

import attrs

from ._base import NotificationParams, RequestParams

__all__ = [
    "LOGGING_LEVELS",
    "LoggingLevel",
    "LoggingMessageNotificationParams",
    "SetLevelRequestParams",
]

#: A syslog severity name; kept as a plain string.
LoggingLevel: TypeAlias = str
#: The severities of RFC 5424, least severe first.
LOGGING_LEVELS: Final = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SetLevelRequestParams(RequestParams):
    """Params of ``logging/setLevel``: the least severe level the client wants to receive."""

    level: LoggingLevel


@attrs.frozen(kw_only=True, eq=False, repr=False)
class LoggingMessageNotificationParams(NotificationParams):
    """Params of ``notifications/message``: one log entry; ``data`` is any JSON value."""

    level: LoggingLevel
    logger: str | None = None
    data: Any
