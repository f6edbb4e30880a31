"""An AHP client for any host: subscriptions, optimistic dispatch and reconciliation, client tools,
reconnect and replay."""

from .client import AhpClient, LocalApproval, channel_kind_of_uri
from .connect import Reconnector, connect, persisted_client_id
from .reconcile import Outcome, Replica

__all__ = [
    "AhpClient",
    "LocalApproval",
    "Outcome",
    "Reconnector",
    "Replica",
    "channel_kind_of_uri",
    "connect",
    "persisted_client_id",
]
