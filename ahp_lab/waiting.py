"""Waiting for a channel's state to satisfy a condition (used by the host and by clients)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["StateWaiters"]

Check = Callable[[Any], Any]


class StateWaiters:
    """Futures waiting until ``check(state)`` of a channel returns something other than ``None``.

    The owner calls :meth:`notify` after every change of a channel; checks run on the new state.
    A check that raises fails its waiter with that exception.
    """

    def __init__(self) -> None:
        self._by_channel: dict[str, list[tuple[Check, asyncio.Future]]] = {}

    def has(self, channel: str) -> bool:
        return bool(self._by_channel.get(channel))

    async def wait(self, channel: str, check: Check, current: Any, timeout: float | None = None) -> Any:
        result = check(current)
        if result is not None:
            return result
        future = asyncio.get_running_loop().create_future()
        entry = (check, future)
        bucket = self._by_channel.setdefault(channel, [])
        bucket.append(entry)
        try:
            return await (future if timeout is None else asyncio.wait_for(future, timeout))
        finally:
            if entry in bucket:
                bucket.remove(entry)

    def notify(self, channel: str, state: Any) -> None:
        for check, future in list(self._by_channel.get(channel, ())):
            if future.done():
                continue
            try:
                result = check(state)
            except Exception as exc:
                future.set_exception(exc)
                continue
            if result is not None:
                future.set_result(result)
