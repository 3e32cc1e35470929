"""The throttle's spacing and its trailing call, on a clock the test moves (no wall time)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from sagents_nb._base.loop import block_on, submit
from sagents_nb.notebook._throttle import Throttle


class FakeTime:
    """A clock that moves only when told, and the timers due on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def clock(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], None]) -> None:
        self.timers.append((self.now + delay, callback))

    def advance(self, seconds: float) -> None:
        self.now += seconds
        due = sorted((t for t in self.timers if t[0] <= self.now), key=lambda t: t[0])
        self.timers = [t for t in self.timers if t[0] > self.now]
        for _, callback in due:
            callback()


def on_library_loop(scenario: Callable[[], Any]) -> Any:
    async def call() -> Any:
        return scenario()

    return block_on(submit(call()), what="the throttle scenario")


def counted_throttle(rate: float) -> tuple[FakeTime, list[float], Throttle]:
    """A throttle on a fake clock, and the times of its calls."""
    time = FakeTime()
    pushes: list[float] = []
    throttle = Throttle(
        lambda: pushes.append(time.now), rate=rate, clock=time.clock, call_later=time.call_later
    )
    return time, pushes, throttle


def test_pushes_are_spaced_by_the_interval_and_the_last_request_is_always_served() -> None:
    time = FakeTime()
    pushes: list[float] = []
    state = {"version": 0}
    seen: list[int] = []

    def push() -> None:
        pushes.append(time.now)
        seen.append(state["version"])

    throttle = Throttle(push, rate=10, clock=time.clock, call_later=time.call_later)

    def scenario() -> None:
        for version in range(1, 101):  # a request every 10 ms for a second
            state["version"] = version
            throttle.request()
            time.advance(0.01)
        time.advance(1.0)  # the trailing call comes due

    on_library_loop(scenario)
    gaps = [b - a for a, b in itertools.pairwise(pushes)]
    assert min(gaps) >= 0.1 - 1e-9
    assert len(pushes) <= 12
    assert seen[-1] == 100  # the newest state went out


def test_requests_while_a_call_is_pending_make_one_trailing_call() -> None:
    time, pushes, throttle = counted_throttle(rate=2)

    def scenario() -> None:
        throttle.request()  # served at once
        for _ in range(50):
            throttle.request()  # all covered by one trailing call
        assert len(time.timers) == 1
        time.advance(0.5)

    on_library_loop(scenario)
    assert pushes == [0.0, 0.5]


def test_a_closed_throttle_makes_no_more_calls() -> None:
    time, pushes, throttle = counted_throttle(rate=10)

    def scenario() -> None:
        throttle.request()
        throttle.request()
        throttle.close()
        time.advance(1.0)
        throttle.request()

    on_library_loop(scenario)
    assert pushes == [0.0]


def test_a_call_at_once_serves_what_was_asked_and_the_trailing_call_is_not_made() -> None:
    time, pushes, throttle = counted_throttle(rate=10)

    def scenario() -> None:
        throttle.request()  # served at once
        assert throttle.settled
        time.advance(0.01)
        throttle.request()  # too soon: a trailing call is due at 0.1
        assert not throttle.settled
        time.advance(0.01)
        throttle.request_at_once()  # a run's end: now, whatever the interval
        assert throttle.settled
        time.advance(1.0)  # the trailing call finds nothing asked since
        throttle.request()
        time.advance(1.0)

    on_library_loop(scenario)
    assert pushes == [0.0, 0.02, 1.02]
