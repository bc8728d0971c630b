"""Small helpers every layer shares: the clock, sync-or-async callbacks, token estimates."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar, cast

T = TypeVar("T")


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC (what runs and the store record)."""
    return datetime.now(UTC)


async def wait_set(event: asyncio.Event, seconds: float) -> bool:
    """Wait for `event`, at most `seconds`; True when it was set. Never swallows a
    cancellation: on Python 3.11 `asyncio.wait_for` returns normally when the task is
    cancelled just as the event is set, and a loop built on it then never stops."""
    try:
        async with asyncio.timeout(seconds):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def maybe_await(value: T | Awaitable[T]) -> T:
    """The value itself, or what it resolves to when a callback returned an awaitable."""
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value


def estimate_tokens(value: Any) -> int:
    """A rough token count (4 characters a token) of text or of JSON-able data."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return max(1, len(text) // 4)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: object) -> timedelta:
    """`90`, `90s`, `30m`, `24h`, `7d` (or a number of seconds, or a timedelta) -> timedelta."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=float(value))
    match = _DURATION.match(str(value))
    if not match:
        raise ValueError(f"{value!r} is not a duration: use seconds or a number with s, m, h or d")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2)])
