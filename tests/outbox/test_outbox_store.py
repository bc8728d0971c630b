"""The outbox table on SQLite and PostgreSQL: latest state wins, one claimer per row,
dependencies, expiry, the unsure flag that guards against double posts, counters."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from bot.agent.util import utcnow
from store.db import Database
from store.outbox import Outbox
from store.outbox_marks import Marked
from tests.outbox.conftest import DbFactory, running_run


async def test_a_put_on_a_row_not_yet_sent_replaces_its_payload(outbox: Outbox) -> None:
    for i in range(1, 11):
        assert await outbox.put("card:r1", channel="C1", text=f"v{i}") == i
    rows = await outbox.claim_due("a")
    assert [(r.key, r.version, r.payload["text"]) for r in rows] == [("card:r1", 10, "v10")]
    assert rows[0].unsure is False  # nothing was ever attempted
    assert await outbox.pending_count() == 1


async def test_puts_while_a_version_is_in_flight_become_one_next_version(outbox: Outbox) -> None:
    await outbox.put("root:r1", channel="C1", text="v1")
    (first,) = await outbox.claim_due("a")
    for i in range(2, 12):
        await outbox.put("root:r1", channel="C1", text=f"v{i}")
    assert await outbox.claim_due("b") == []  # one dispatcher per row at a time
    assert await outbox.mark_sent("root:r1", first.version, "111.1", claim=first.claim_token)
    (second,) = await outbox.claim_due("b")
    assert (second.version, second.payload["text"], second.ts) == (11, "v11", "111.1")
    assert second.unsure is False
    assert await outbox.mark_sent("root:r1", 11, "999.9", claim=second.claim_token)
    assert await outbox.ts_of("root:r1") == "111.1"  # the ts is kept once known
    assert await outbox.pending_count() == 0
    assert await outbox.claim_due("c") == []


async def test_a_stale_claim_cannot_mark_the_row(outbox: Outbox) -> None:
    await outbox.put("card:r1", channel="C1", text="x")
    (row,) = await outbox.claim_due("a", lease_seconds=0.05)
    await asyncio.sleep(0.1)
    (again,) = await outbox.claim_due("b")
    assert again.unsure is True  # a's claim may have posted: b must look before posting
    # a's late answer does not finish the row, but the message it names exists: its ts is kept
    assert not await outbox.mark_sent("card:r1", row.version, "1.1", claim=row.claim_token)
    assert (await outbox.get("card:r1")).claim_token == again.claim_token  # type: ignore[union-attr]
    assert await outbox.ts_of("card:r1") == "1.1"
    assert await outbox.mark_sent("card:r1", again.version, "1.1", claim=again.claim_token)
    assert await outbox.pending_count() == 0


async def test_a_failure_that_slack_certainly_refused_clears_unsure(outbox: Outbox) -> None:
    await outbox.put("card:r1", channel="C1", text="x")
    (row,) = await outbox.claim_due("a")
    await outbox.mark_failed("card:r1", utcnow(), "ratelimited", claim=row.claim_token)
    (row,) = await outbox.claim_due("a")
    assert row.unsure is False and row.attempts == 1
    await outbox.mark_failed("card:r1", utcnow(), "timeout", claim=row.claim_token, maybe_sent=True)
    (row,) = await outbox.claim_due("a")
    assert row.unsure is True and row.attempts == 2
    await outbox.mark_failed("card:r1", None, "channel_not_found", claim=row.claim_token)
    assert (await outbox.get("card:r1")).state == "failed"  # type: ignore[union-attr]
    assert await outbox.pending_count() == 0


async def test_a_reply_waits_for_its_thread_and_order(outbox: Outbox) -> None:
    await outbox.put("answer:r1:1", channel="C1", thread_key="root:r1", after="answer:r1:0")
    await outbox.put("answer:r1:0", channel="C1", thread_key="root:r1", text="part 0")
    await outbox.put("root:r1", channel="C1", text="root")
    (root,) = await outbox.claim_due("a")
    assert root.key == "root:r1"
    # a post that rows wait for says so (its sender claims again now; else it need not)
    marked = await outbox.mark_sent("root:r1", 1, "100.1", claim=root.claim_token)
    assert marked == Marked.AWAITED
    (part0,) = await outbox.claim_due("a")
    assert (part0.key, part0.thread_ts) == ("answer:r1:0", "100.1")
    marked = await outbox.mark_sent("answer:r1:0", 1, "100.2", claim=part0.claim_token)
    assert marked == Marked.AWAITED  # part 1 comes after it
    (part1,) = await outbox.claim_due("a")
    assert (part1.key, part1.thread_ts) == ("answer:r1:1", "100.1")
    marked = await outbox.mark_sent("answer:r1:1", 1, "100.3", claim=part1.claim_token)
    assert marked == Marked.SENT  # nothing waits for it
    # an update of the root does not hold its replies back
    await outbox.put("root:r1", channel="C1", text="root v2")
    await outbox.put("answer:r1:2", channel="C1", thread_key="root:r1")
    keys = {r.key for r in await outbox.claim_due("a")}
    assert keys == {"root:r1", "answer:r1:2"}


async def test_a_delayed_put_coalesces_and_keeps_its_time(outbox: Outbox) -> None:
    await outbox.put("status:r1", channel="C1", text="1", delay=1.0)
    assert await outbox.claim_due("a") == []
    await asyncio.sleep(0.6)
    await outbox.put("status:r1", channel="C1", text="2", delay=1.0)  # keeps the first time
    await asyncio.sleep(0.5)
    (row,) = await outbox.claim_due("a")
    assert row.payload["text"] == "2"


async def test_expired_rows_are_dropped_not_sent(outbox: Outbox) -> None:
    await outbox.put("ephemeral:1", kind="ephemeral", channel="C1", user="U1", expires_in=0.05)
    await outbox.put("ephemeral:2", kind="ephemeral", channel="C1", user="U1", expires_in=60)
    await asyncio.sleep(0.1)
    assert [r.key for r in await outbox.claim_due("a")] == ["ephemeral:2"]
    assert await outbox.drop_expired() == ["ephemeral:1"]
    assert (await outbox.get("ephemeral:1")).state == "dropped"  # type: ignore[union-attr]


async def test_counters(outbox: Outbox) -> None:
    assert (await outbox.pending_count(), await outbox.oldest_pending_age()) == (0, 0.0)
    await outbox.put("a", channel="C1", text="x")
    await asyncio.sleep(0.2)
    await outbox.put("b", channel="C1", text="x")
    assert await outbox.pending_count() == 2
    assert 0.15 < await outbox.oldest_pending_age() < 5
    assert await outbox.next_due_in() == 0.0
    assert await outbox.purge(timedelta(0)) == 0  # pending rows are never purged


async def test_claims_of_two_replicas_never_overlap(db_url: str, make_db: DbFactory) -> None:
    replicas = [Outbox(await make_db(db_url)) for _ in range(2)]
    for i in range(40):
        await replicas[0].put(f"card:{i}", channel=f"C{i % 4}", text=str(i))

    async def claim_all(box: Outbox, owner: str) -> list[str]:
        got: list[str] = []
        while rows := await box.claim_due(owner, 3):
            got += [r.key for r in rows]
        return got

    a, b = await asyncio.gather(claim_all(replicas[0], "a"), claim_all(replicas[1], "b"))
    assert sorted(a + b) == sorted(f"card:{i}" for i in range(40))
    assert not set(a) & set(b)


async def test_a_put_wakes_subscribers(outbox: Outbox, db: Database) -> None:
    heard: list[tuple[str | None, float]] = []
    unsubscribe = outbox.subscribe(lambda key, in_seconds: heard.append((key, in_seconds)))
    await outbox.put("home:T:U1", kind="home", user="U1", payload={"view": {}})
    unsubscribe()
    await outbox.put("home:T:U2", kind="home", user="U2", payload={"view": {}})
    assert heard == [("home:T:U1", 0.0)]


async def test_a_put_says_when_its_row_is_due_and_a_held_row_wakes_nobody(
    outbox: Outbox, db: Database
) -> None:
    heard: list[tuple[str | None, float]] = []
    outbox.subscribe(lambda key, in_seconds: heard.append((key, in_seconds)))
    await outbox.put("root:r1", channel="C1", text="working", delay=2.0)
    [(key, in_seconds)] = heard
    assert key == "root:r1" and 1.5 < in_seconds <= 2.0  # debounced: due later, not now
    await outbox.put("root:r1", channel="C1", text="still working")  # keeps its time
    assert heard[1][0] == "root:r1" and 1.5 < heard[1][1] <= 2.0
    await outbox.put("card:q1", channel="C1", text="card")
    [row] = await outbox.claim_due("a", limit=5)
    assert row.key == "card:q1"
    heard.clear()
    await outbox.put("card:q1", channel="C1", text="approved")  # its send is in flight
    assert heard == []
    assert (
        await outbox.mark_sent("card:q1", row.version, "1.1", claim=row.claim_token)
        == Marked.PENDING
    )


async def test_one_sender_at_a_time_and_a_standby_takes_over(outbox: Outbox) -> None:
    assert await outbox.hold_sender("a", 0.2)
    assert not await outbox.hold_sender("b", 0.2)
    assert await outbox.hold_sender("a", 0.2)  # renewed
    await asyncio.sleep(0.3)
    assert await outbox.hold_sender("b", 5)  # a's lease lapsed
    assert not await outbox.hold_sender("a", 5)
    await outbox.release_sender("b")
    assert await outbox.hold_sender("a", 5)


async def test_payloads_are_encrypted_when_the_store_has_keys(db_url: str) -> None:
    import sqlalchemy as sa
    from cryptography.fernet import Fernet

    from store.intake import Intake
    from store.migrate import upgrade
    from store.rekey import reencrypt

    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    db = Database(db_url, [old])
    try:
        await upgrade(db)
        box, intake = Outbox(db), Intake(db)
        await box.put("card:r1", channel="C1", text="approve refund 4711?")
        await intake.record("view:V1:h", "edit", {"reason": "typo in the amount"})
        async with db.read() as conn:
            raw = await conn.scalar(sa.text("SELECT payload FROM slack_outbox"))
            raw_intake = await conn.scalar(sa.text("SELECT payload FROM slack_intake"))
        assert "4711" not in str(raw) and "typo" not in str(raw_intake)
    finally:
        await db.close()
    rotated = Database(db_url, [new, old])
    try:
        assert await reencrypt(rotated, 10) >= 2
        assert (await Outbox(rotated).get("card:r1")).payload["text"].endswith("4711?")  # type: ignore[union-attr]
    finally:
        await rotated.close()


async def test_channels_take_turns_in_a_claim(outbox: Outbox) -> None:
    """A burst in one channel (paced there at 1 a second) never holds another channel's rows
    back: each channel's oldest due row first, then each one's second, and so on."""
    for i in range(30):
        await outbox.put(f"root:busy{i}", channel="C_BUSY", text=f"busy {i}")
    await outbox.put("root:quiet", channel="C_QUIET", text="quiet")
    claimed = [row.key for row in await outbox.claim_due("d", limit=4)]
    assert claimed[:2] == ["root:busy0", "root:quiet"] or claimed[:2] == [
        "root:quiet",
        "root:busy0",
    ]
    assert claimed[2:] == ["root:busy1", "root:busy2"]  # then the busy channel, oldest first


async def test_a_new_channel_goes_before_the_next_rows_of_channels_already_sending(
    outbox: Outbox,
) -> None:
    """The rows a claim holds (sent, or waiting for Slack's one post a second in their
    channel) count as their channel's turns: behind a burst in fifty channels, someone
    else's first message in another channel is claimed next, not after each busy channel's
    next row (issue 22, fair intake: a new command's root within 1 s of a burst)."""
    for i in range(3):
        for c in range(50):
            await outbox.put(f"root:b{c}-{i}", channel=f"C_BUSY{c}", text=f"busy {i}")
    first = await outbox.claim_due("d", limit=50)  # each busy channel's first row: held
    assert sorted(row.key for row in first) == sorted(f"root:b{c}-0" for c in range(50))
    await outbox.put("root:new", channel="C_NEW", text="someone else")
    claimed = [row.key for row in await outbox.claim_due("d", limit=5)]
    assert claimed[0] == "root:new"
    assert all(key.endswith("-1") for key in claimed[1:])  # then the busy channels' seconds


async def test_card_updates_are_claimed_before_other_rows(outbox: Outbox) -> None:
    """Under Slack's limits a decision shows first: an updated card goes ahead of older
    updates of roots (in its channel and in others); posts keep their order."""
    keys = [f"root:r{i}" for i in range(5)] + ["card:q1", "card:q2"]
    for key in keys:
        await outbox.put(key, channel="C_OPS" if key != "card:q2" else "C_DEV", text="posted")
    for i, row in enumerate(await outbox.claim_due("d", limit=10)):
        await outbox.mark_sent(row.key, row.version, f"1.{i}", claim=row.claim_token)
    for key in keys:  # every message changes; the cards last
        await outbox.put(key, channel="C_OPS", text="changed")
    await outbox.put("card:q3", channel="C_OPS", text="a new card")  # a post: no priority
    claimed = [row.key for row in await outbox.claim_due("d", limit=4)]
    assert sorted(claimed[:2]) == ["card:q1", "card:q2"]
    assert "card:q3" not in claimed


async def test_a_held_state_is_put_only_while_its_run_is_running(
    outbox: Outbox, db: Database
) -> None:
    from store.cancel import cancel_run

    await running_run(db)
    assert await outbox.put("root:r2", channel="C1", text="gone", while_running="r2") == 0
    assert await outbox.get("root:r2") is None  # only a row that exists: never inserted
    await outbox.put("root:r1", channel="C1", text="queued")
    assert await outbox.put("root:r1", channel="C1", text="running", while_running="r1") == 2
    await cancel_run(db, "r1", actor="U2", detail="stop")
    await outbox.put("root:r1", channel="C1", text="cancelled")
    assert await outbox.put("root:r1", channel="C1", text="running", while_running="r1") == 0
    (row,) = await outbox.claim_due("a")
    assert (row.version, row.payload["text"]) == (3, "cancelled")


async def test_a_fresh_put_inserts_first_and_updates_a_row_that_exists(outbox: Outbox) -> None:
    assert await outbox.put("answer:r1:0.0", channel="C1", text="a", fresh=True) == 1
    assert await outbox.put("answer:r1:0.0", channel="C1", text="b", fresh=True) == 2
    (row,) = await outbox.claim_due("a")
    assert (row.version, row.payload["text"]) == (2, "b")
