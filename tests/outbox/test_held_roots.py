"""A running run's root states wait in the process for the debounce and only the newest is put
(bot/slack/root_message.py), through the real outbox on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio

from bot.slack.root_message import HeldRoots
from bot.slack.writes import Writes
from store.cancel import cancel_run
from store.db import Database
from store.outbox import Outbox
from tests.outbox.conftest import running_run

HOLD = 0.15


async def _running(db: Database, outbox: Outbox, run_id: str = "r1") -> None:
    await running_run(db, run_id)
    await outbox.put(f"root:{run_id}", channel="C1", text="started")  # its root row


async def _text(outbox: Outbox, key: str) -> tuple[int, str]:
    row = await outbox.get(key)
    assert row is not None
    return row.version, row.payload["text"]


async def test_the_states_of_a_hold_are_one_put_of_the_newest(outbox: Outbox, db: Database) -> None:
    await _running(db, outbox)
    held = HeldRoots(Writes(outbox).while_running, HOLD)
    for step in ("deciding", "tool 1", "tool 2"):
        held.later("root:r1", "C1", {"text": step}, "r1")
    assert await _text(outbox, "root:r1") == (1, "started")  # nothing written yet
    await asyncio.sleep(HOLD * 3)
    assert await _text(outbox, "root:r1") == (2, "tool 2")
    assert not held.busy


async def test_a_state_put_now_replaces_what_was_held(outbox: Outbox, db: Database) -> None:
    await _running(db, outbox)
    held = HeldRoots(Writes(outbox).while_running, HOLD)
    held.later("root:r1", "C1", {"text": "running"}, "r1")
    await held.drop("root:r1")
    await outbox.put("root:r1", channel="C1", text="waiting for approval")
    await asyncio.sleep(HOLD * 3)
    assert await _text(outbox, "root:r1") == (2, "waiting for approval")


async def test_a_state_given_while_the_last_is_put_is_put_after_it(
    outbox: Outbox, db: Database
) -> None:
    await _running(db, outbox)
    writes = Writes(outbox)
    putting = asyncio.Event()

    async def slow_put(key: str, channel: str, message: dict[str, str], run_id: str) -> int:
        putting.set()
        await asyncio.sleep(HOLD)
        return await writes.while_running(key, channel, message, run_id)

    held = HeldRoots(slow_put, HOLD)
    held.later("root:r1", "C1", {"text": "tool 1"}, "r1")
    await putting.wait()
    held.later("root:r1", "C1", {"text": "tool 2"}, "r1")
    await asyncio.sleep(HOLD * 5)
    assert await _text(outbox, "root:r1") == (3, "tool 2")


async def test_a_held_state_never_replaces_the_cancel_put_by_another_process(
    outbox: Outbox, db: Database
) -> None:
    await _running(db, outbox)
    held = HeldRoots(Writes(outbox).while_running, HOLD)
    held.later("root:r1", "C1", {"text": "running"}, "r1")
    await cancel_run(db, "r1", actor="U2", detail="stop")  # the front, on a Cancel click
    await outbox.put("root:r1", channel="C1", text="cancelled")
    await asyncio.sleep(HOLD * 3)
    assert await _text(outbox, "root:r1") == (2, "cancelled")


async def test_closing_puts_what_is_held(outbox: Outbox, db: Database) -> None:
    await _running(db, outbox)
    held = HeldRoots(Writes(outbox).while_running, 60.0)
    held.later("root:r1", "C1", {"text": "tool 1"}, "r1")
    await held.close()
    assert await _text(outbox, "root:r1") == (2, "tool 1")
    assert not held.busy
