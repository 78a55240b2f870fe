"""``subscriptions/listen`` (2026-07-28): one long-lived request that streams the notifications a client opted into."""

import attrs

from ._base import NotificationParams, RequestParams, Result, WireType

__all__ = [
    "SubscriptionFilter",
    "SubscriptionsListenRequestParams",
    "SubscriptionsAcknowledgedNotificationParams",
    "SubscriptionsListenResult",
]


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SubscriptionFilter(WireType):
    """Which notifications a listen stream carries; everything is opt-in.

    ``task_ids`` comes from the tasks extension.
    """

    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: list[str] | None = None
    task_ids: list[str] | None = None


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SubscriptionsListenRequestParams(RequestParams):
    """Params of ``subscriptions/listen``: the requested filter."""

    notifications: SubscriptionFilter


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SubscriptionsAcknowledgedNotificationParams(NotificationParams):
    """Params of ``notifications/subscriptions/acknowledged``: the part of the filter the server will honour."""

    notifications: SubscriptionFilter


@attrs.frozen(kw_only=True, eq=False, repr=False)
class SubscriptionsListenResult(Result):
    """Sent when the server ends a listen stream gracefully; ``_meta`` names the subscription."""
