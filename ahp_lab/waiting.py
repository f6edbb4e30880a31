"""Waiting for a channel's state to satisfy a condition (used by the host and by clients)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

__all__ = ["StateWaiters", "check_wait_arguments"]

Check = Callable[[Any], Any]


def _shown(value: Any) -> str:
    if callable(value):
        return "a function"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_wait_arguments(channel: Any, check: Any) -> None:
    """Reject ``wait_for(channel, check)`` arguments in the wrong order or of the wrong type with a
    ``TypeError`` that shows the right call (every ``wait_for`` takes the channel first)."""
    if isinstance(channel, str) and callable(check):
        return
    right = "wait_for(lab.chat, lambda state: ...)"
    if callable(channel):
        raise TypeError(
            f"wait_for takes the channel first, then the check: {right}; got {_shown(channel)}, "
            f"then {_shown(check)}"
        )
    if not isinstance(channel, str):
        raise TypeError(
            f"wait_for's channel must be a channel URI such as lab.chat, not {_shown(channel)}: {right}"
        )
    raise TypeError(
        f"wait_for's check must be a function of the channel's state, not {_shown(check)}: {right}"
    )


class StateWaiters:
    """Futures waiting until ``check(state)`` of a channel returns something other than ``None``.

    The owner calls :meth:`notify` after every change of a channel; checks run on the new state.
    A check that raises fails its waiter with that exception.
    """

    def __init__(self) -> None:
        self._by_channel: dict[str, list[tuple[Check, asyncio.Future]]] = {}

    def has(self, channel: str) -> bool:
        return bool(self._by_channel.get(channel))

    def channels(self) -> list[str]:
        """The channels something waits on."""
        return [channel for channel, waiting in self._by_channel.items() if waiting]

    async def wait(self, channel: str, check: Check, current: Any, timeout: float | None = None) -> Any:
        check_wait_arguments(channel, check)
        result = check(current)
        if result is not None:
            return result
        future = asyncio.get_running_loop().create_future()
        entry = (check, future)
        bucket = self._by_channel.setdefault(channel, [])
        bucket.append(entry)
        try:
            return await (future if timeout is None else asyncio.wait_for(future, timeout))
        except TimeoutError:
            raise TimeoutError(
                f"no state of {channel} satisfied the condition within {timeout:g} s"
            ) from None
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
