"""Fixtures for the view-model and widget tests (no browser)."""

from __future__ import annotations

import pytest

from ahp_lab.widgets.demo import demo_source


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeHandle:
    def __init__(self, when: float, callback) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """Enough of an asyncio loop for the coalescer: call_later plus a manual clock."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.handles: list[FakeHandle] = []

    def call_later(self, delay: float, callback) -> FakeHandle:
        h = FakeHandle(self.clock.now + delay, callback)
        self.handles.append(h)
        return h

    @property
    def pending(self) -> list[FakeHandle]:
        return [h for h in self.handles if not h.cancelled]

    def advance(self, dt: float) -> None:
        target = self.clock.now + dt
        while True:
            due = sorted((h for h in self.pending if h.when <= target), key=lambda h: h.when)
            if not due:
                break
            h = due[0]
            self.handles.remove(h)
            self.clock.now = max(self.clock.now, h.when)
            h.callback()
        self.clock.now = target


@pytest.fixture(autouse=True)
def no_running_loop(monkeypatch):
    """Widgets update synchronously here unless a test passes its own loop: a loop left "running"
    in this thread by another test's tooling (Playwright's sync API keeps one while its browser
    fixture lives) would otherwise swallow the scheduled refreshes."""
    import ahp_lab.widgets.base as base

    monkeypatch.setattr(base, "_running_loop", lambda: None)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def loop(clock: FakeClock) -> FakeLoop:
    return FakeLoop(clock)


@pytest.fixture
def demo():
    return demo_source()


@pytest.fixture
def hostile():
    return demo_source(hostile=True)


def capture(widget) -> list[dict]:
    """Replace ``widget.send`` so custom messages to the browser are collected in a list."""
    sent: list[dict] = []
    widget.send = lambda content, buffers=None: sent.append(content)
    return sent


# Values that must never make a view model raise, in any slot.
WEIRD = [None, 0, -1, 3.5, True, "", "x" * 10, [], [None], [1, "a"], {}, {"kind": 7}, {"type": None}, ("t",)]
