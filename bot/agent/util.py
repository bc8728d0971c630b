"""Small helpers every layer shares: the clock, and calling sync-or-async callbacks."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TypeVar, cast

T = TypeVar("T")


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC (what runs and the store record)."""
    return datetime.now(UTC)


async def maybe_await(value: T | Awaitable[T]) -> T:
    """The value itself, or what it resolves to when a callback returned an awaitable."""
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value
