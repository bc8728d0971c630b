"""`wait_set`: a cancellation that arrives just as the event is set still cancels (on Python
3.11 `asyncio.wait_for` returned normally then, and the outbox dispatcher's loop, told to stop
at that moment, never stopped: a rare hang of a bot's shutdown)."""

from __future__ import annotations

import asyncio

import pytest

from bot.agent.util import wait_set


async def test_a_cancel_as_the_event_is_set_cancels() -> None:
    event = asyncio.Event()
    waiting = asyncio.create_task(wait_set(event, 10))
    await asyncio.sleep(0)
    event.set()
    waiting.cancel()  # in the same turn: the event's waiter is done, the task not yet run
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_set_or_timed_out() -> None:
    event = asyncio.Event()
    assert await wait_set(event, 0.01) is False
    event.set()
    assert await wait_set(event, 0.01) is True
