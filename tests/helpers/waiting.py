"""Wait for a condition instead of sleeping: `eventually(probe)` polls until it holds.

    run = await eventually(lambda: store.runs.get("r1"), what="the run to be saved")
    page = eventually_sync(lambda: get(url), what="the demo page", ignoring=(OSError,))

The probe is called (and awaited when it returns an awaitable) every `interval` seconds until
it returns a truthy value, which is returned. After `timeout` seconds an AssertionError names
what was awaited, the last value the probe returned (or the last exception it raised among
`ignoring`), and `detail()` when given (e.g. a process log). Any other exception from the
probe, including an AssertionError, stops the wait at once.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

Probe = Callable[[], "T | Awaitable[T]"]


class _Wait:
    """The deadline and the last observation of one wait, and the message when it fails."""

    def __init__(
        self,
        probe: Callable[..., Any],
        timeout: float,
        what: str | None,
        detail: Callable[[], str] | None,
    ) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.what = what or getattr(probe, "__qualname__", repr(probe))
        self.detail = detail
        self.last: str = "(never called)"

    def saw(self, value: object) -> None:
        self.last = f"last value: {value!r}"[:2000]

    def failed(self, exc: BaseException) -> None:
        self.last = f"last error: {exc!r}"[:2000]

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def timed_out(self) -> AssertionError:
        message = f"waited {self.timeout}s for {self.what}; {self.last}"
        if self.detail is not None:
            message += f"\n{self.detail()}"
        return AssertionError(message)


async def eventually(
    probe: Callable[[], T | Awaitable[T]],
    *,
    timeout: float = 10.0,  # noqa: ASYNC109 - the deadline is this helper's point
    interval: float = 0.05,
    what: str | None = None,
    detail: Callable[[], str] | None = None,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Await until `probe()` is truthy and return its value; AssertionError on timeout."""
    wait = _Wait(probe, timeout, what, detail)
    while True:
        try:
            value = probe()
            if inspect.isawaitable(value):
                value = await value
        except ignoring as exc:
            wait.failed(exc)
        else:
            if value:
                return value  # type: ignore[return-value]
            wait.saw(value)
        remaining = wait.remaining()
        if remaining <= 0:
            raise wait.timed_out()
        await asyncio.sleep(min(interval, remaining))  # polling, not waiting for behaviour


def eventually_sync(
    probe: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.05,
    what: str | None = None,
    detail: Callable[[], str] | None = None,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """`eventually` for synchronous tests (e.g. one driving a subprocess over HTTP)."""
    wait = _Wait(probe, timeout, what, detail)
    while True:
        try:
            value = probe()
        except ignoring as exc:
            wait.failed(exc)
        else:
            if value:
                return value
            wait.saw(value)
        remaining = wait.remaining()
        if remaining <= 0:
            raise wait.timed_out()
        time.sleep(min(interval, remaining))  # polling, not waiting for behaviour
