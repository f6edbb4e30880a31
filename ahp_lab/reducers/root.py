"""Root channel reducer (``ahp-root://``): agents, active-session count, terminals, host config."""

from __future__ import annotations

from ._util import config_changed, make_reducer, set_field

reduce_root = make_reducer(
    "root",
    {
        "root/agentsChanged": set_field("agents"),
        "root/activeSessionsChanged": set_field("activeSessions"),
        "root/terminalsChanged": set_field("terminals"),
        "root/configChanged": lambda state, action, now_ms: config_changed(state, action),
    },
)
