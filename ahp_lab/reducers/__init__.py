"""Pure reducers for every AHP channel.

Each reducer is ``reduce(state, action, now_ms=0, log=None) -> state`` over JSON-shaped state:
it never mutates its input, shares every unchanged subtree with it, reads time only from
``now_ms`` (epoch milliseconds), and never raises — unknown action types and malformed actions
return the input state object itself. The one exception is input nested deeper than Python's
recursion limit (``RecursionError``), which the host's limits refuse before any reducer sees it.

The caller must not mutate a state either, once a reducer has seen it: the result shares its
unchanged parts, and a long list is indexed by identity, so a list changed in place and passed
again still reads as it was. Copy a state (``copy.deepcopy``) to edit it.

State is JSON, so a number JSON cannot carry is held as JSON carries it. Where JavaScript's ``+``
makes ``NaN`` or ±``Infinity`` (``undefined + undefined``: a ``chat/delta`` without ``content`` on
a part without content, a ``terminal/data`` without ``data`` on output without a value), the state
holds ``null`` (absent), as the wire and every snapshot do. The reference keeps the number in memory
until the next append, which then makes ``"NaNx"`` where ahp_lab, like a client that joined from a
snapshot, makes ``"undefinedx"``. Only actions that the host refuses as malformed (the text is a
required string) can reach it.

The other known difference is a status bitset with bit 31 set (or a negative or fractional status).
The reference's 32-bit bitwise operators are signed, so a rewritten status comes out negative
(``2147483720`` with ``isRead`` becomes ``-2147483544``); ahp_lab computes on unsigned values, as
the protocol digest prescribes (reducer-rules §6), and gives ``2147483752``, equal modulo 2**32. No
flag the protocol defines uses that bit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .annotations import reduce_annotations
from .changeset import reduce_changeset
from .chat import derive_status, reduce_chat
from .resource_watch import reduce_resource_watch
from .root import reduce_root
from .session import indexed, input_needed_status, reduce_session
from .terminal import reduce_terminal

REDUCERS = {
    "root": reduce_root,
    "session": reduce_session,
    "chat": reduce_chat,
    "terminal": reduce_terminal,
    "changeset": reduce_changeset,
    "annotations": reduce_annotations,
    "resourceWatch": reduce_resource_watch,
}

CHANNEL_KINDS = tuple(REDUCERS)

#: The clock (epoch ms) the upstream conformance fixtures freeze for every reducer call.
FIXTURE_NOW_MS = 9999


def prepared(kind: str, state: Any) -> Any:
    """``state`` as the reducer of channel ``kind`` holds it across many actions, equal to it: a
    session's large customization tree indexed (what its first action would do, done when the
    state is loaded)."""
    return indexed(state) if kind == "session" else state


def reduce(kind: str, state: Any, action: Any, now_ms: int | Callable[[], int] = 0, log=None) -> Any:
    """Apply ``action`` to ``state`` with the reducer of channel ``kind`` (``now_ms``: the clock in epoch
    milliseconds, or the spec's function returning it)."""
    try:
        reducer = REDUCERS[kind]
    except KeyError:
        raise ValueError(
            f"unknown channel kind {kind!r}; expected one of {', '.join(CHANNEL_KINDS)}"
        ) from None
    return reducer(state, action, now_ms, log)


__all__ = [
    "REDUCERS",
    "CHANNEL_KINDS",
    "FIXTURE_NOW_MS",
    "reduce",
    "prepared",
    "reduce_root",
    "reduce_session",
    "reduce_chat",
    "reduce_terminal",
    "reduce_changeset",
    "reduce_annotations",
    "reduce_resource_watch",
    "derive_status",
    "input_needed_status",
]
