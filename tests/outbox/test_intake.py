"""The intake on SQLite and PostgreSQL: one row per Slack interaction however often it is
delivered, held by the replica that acked it, taken over when that replica died."""

from __future__ import annotations

import asyncio

from store.intake import Intake
from tests.outbox.conftest import DbFactory

CLICK = {"type": "block_actions", "user": {"id": "U1"}, "actions": [{"action_id": "approve"}]}


async def test_a_retried_delivery_or_a_double_click_is_one_row(intake: Intake) -> None:
    assert await intake.record("action:1.1:2.2:U1", "approve", CLICK, owner="a")
    assert not await intake.record("action:1.1:2.2:U1", "approve", CLICK, owner="b")
    assert await intake.pending_count() == 1
    row = await intake.get("action:1.1:2.2:U1")
    assert row is not None and row.payload == CLICK and row.claim_owner == "a"


async def test_concurrent_deliveries_on_two_replicas_record_once(
    db_url: str, make_db: DbFactory
) -> None:
    replicas = [Intake(await make_db(db_url)) for _ in range(2)]
    new = await asyncio.gather(
        *(replicas[i % 2].record("event:Ev1", "mention", {"i": i}) for i in range(10))
    )
    assert sorted(new) == [False] * 9 + [True]


async def test_a_row_whose_replica_died_is_claimed_by_another(intake: Intake) -> None:
    await intake.record("view:V1:h", "edit", {"v": 1}, owner="dead", lease=0.2)
    await intake.record("command:T1", "command", {"c": 1})  # recorded, never held
    assert [r.key for r in await intake.claim("b", lease=5)] == ["command:T1"]
    await asyncio.sleep(0.3)
    (row,) = await intake.claim("b", lease=5)
    assert (row.key, row.payload, row.attempts, row.claim_owner) == (
        "view:V1:h",
        {"v": 1},
        2,
        "b",
    )
    assert await intake.claim("c") == []  # b holds both now
    assert await intake.done("view:V1:h", {"decided": True})
    assert not await intake.done("view:V1:h")  # processed once
    assert await intake.pending_count() == 1
    assert await intake.release("command:T1", "b")
    assert (await intake.claim_one("command:T1", "c")) is not None
    assert await intake.claim_one("command:T1", "d") is None


async def test_a_burst_is_recorded_in_one_transaction_and_closed_together(
    intake: Intake,
) -> None:
    assert await intake.record("action:T0", "action", CLICK, owner="a")
    burst = [(f"action:T{i}", "action", {**CLICK, "i": i}) for i in range(5)]
    new = await intake.record_many(burst, owner="b", lease=5)
    assert new == {f"action:T{i}" for i in range(1, 5)}  # T0 was recorded before
    assert await intake.record_many(burst, owner="c") == set()
    row = await intake.get("action:T3")
    assert row is not None and row.payload["i"] == 3 and row.claim_owner == "b"
    await intake.done_many([("action:T1", {"ok": True}), ("action:T2", {"error": "X"})])
    assert await intake.pending_count() == 3
    done = await intake.get("action:T2")
    assert done is not None and done.status == "done" and done.result == {"error": "X"}


async def test_a_long_processing_keeps_its_row(intake: Intake) -> None:
    await intake.record("view:V2:t", "view", {"v": 2}, owner="a", lease=0.3)
    assert await intake.renew("view:V2:t", "a", lease=5)
    await asyncio.sleep(0.4)
    assert await intake.claim("b") == []  # still held by a
    assert not await intake.renew("view:V2:t", "b")
