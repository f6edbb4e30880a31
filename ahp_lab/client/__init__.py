"""An AHP client: subscriptions, optimistic dispatch and reconciliation, client tools."""

from .client import AhpClient, LocalApproval, channel_kind_of_uri

__all__ = ["AhpClient", "LocalApproval", "channel_kind_of_uri"]
