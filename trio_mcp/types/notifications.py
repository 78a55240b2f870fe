"""Params of the notifications that belong to no single feature: cancellation and progress.

Notifications whose params are only ``_meta`` (``notifications/initialized``, the ``list_changed`` family) use
:class:`~trio_mcp.types.NotificationParams`.
"""

import attrs

from ._base import NotificationParams, ProgressToken, RequestId

__all__ = ["CancelledNotificationParams", "ProgressNotificationParams"]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class CancelledNotificationParams(NotificationParams):
    """Params of ``notifications/cancelled``: which request to stop, and why.

    ``request_id`` is optional only in 2025-11-25 (where tasks are cancelled with ``tasks/cancel`` instead).
    """

    request_id: RequestId | None = None
    reason: str | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class ProgressNotificationParams(NotificationParams):
    """Params of ``notifications/progress``; ``message`` exists from 2025-03-26."""

    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None
