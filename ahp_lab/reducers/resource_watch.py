"""Resource-watch channel reducer: the state is fixed; change events live in the envelope stream."""

from __future__ import annotations

from ._util import make_reducer

reduce_resource_watch = make_reducer(
    "resourceWatch", {"resourceWatch/changed": lambda state, action, now_ms: state}
)
