"""Small helpers every layer shares: the clock, sync-or-async callbacks, token estimates."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

T = TypeVar("T")


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC (what runs and the store record)."""
    return datetime.now(UTC)


async def maybe_await(value: T | Awaitable[T]) -> T:
    """The value itself, or what it resolves to when a callback returned an awaitable."""
    if inspect.isawaitable(value):
        return cast(T, await value)
    return value


def estimate_tokens(value: Any) -> int:
    """A rough token count (4 characters a token) of text or of JSON-able data."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return max(1, len(text) // 4)
