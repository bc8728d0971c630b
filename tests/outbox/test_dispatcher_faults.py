"""The dispatcher when Slack misbehaves: rate limits, outages (503 and refused connections),
a crash between a post and its record, a timeout after a post landed, two replicas."""

from __future__ import annotations

import asyncio
import time

import pytest

from bot.sandbox import SlackSandbox
from store.outbox import Outbox
from tests.outbox.conftest import (
    DbFactory,
    DispatcherFactory,
    SandboxFactory,
    all_messages,
    with_key,
)

CHANNELS = ["C_A", "C_B", "C_C", "C_D"]


async def test_pacing_keeps_429s_low_with_slack_limits_on(
    outbox: Outbox, make_sandbox: SandboxFactory, make_dispatcher: DispatcherFactory
) -> None:
    """16 cards in 4 channels, each posted then decided (an update each), plus a burst of
    status changes: everything lands, paced within the sandbox's Slack limits."""
    sandbox = await make_sandbox(rate_limits=True)
    dispatcher = await make_dispatcher(outbox, sandbox)
    keys = [f"card:{i}" for i in range(16)]
    started = time.monotonic()
    for i, key in enumerate(keys):
        await outbox.put(key, channel=CHANNELS[i % 4], text=f"{key} pending")
    await dispatcher.drain(30)
    for key in keys:
        for n in range(3):  # three changes each: coalesced
            await outbox.put(key, text=f"{key} approved {n}")
    await dispatcher.drain(60)
    took = time.monotonic() - started
    for key in keys:
        (message,) = with_key(all_messages(sandbox), key)
        assert message["text"] == f"{key} approved 2"
    print(
        f"\n16 posts + 16 updates with Slack limits on: {took:.1f}s, "
        f"429s received={dispatcher.stats.ratelimited_total}, "
        f"sandbox 429s={sandbox.limits.ratelimited_total}, calls={dict(sandbox.limits.calls)}"
    )
    assert sandbox.limits.ratelimited_total <= 2
    assert sandbox.limits.calls["chat.update"] <= 2 * 16  # 48 changes, at most 32 updates


async def test_updates_past_the_budget_are_left_for_their_pace_not_claimed(
    outbox: Outbox, make_sandbox: SandboxFactory, make_dispatcher: DispatcherFactory
) -> None:
    """12 messages updated at once, past chat.update's burst (Tier 3: 4, then about 50 a
    minute): a claim takes those whose slot comes within `max_pace_wait` and leaves the
    others due at their slot, instead of claiming them to hand them back (two writes more
    each). Every update lands once, in order of its slot, with no 429."""
    sandbox = await make_sandbox(rate_limits=True)
    dispatcher = await make_dispatcher(outbox, sandbox, max_pace_wait=1.0)
    keys = [f"card:{i}" for i in range(12)]
    for i, key in enumerate(keys):
        await outbox.put(key, channel=f"C_{i}", text=f"{key} pending")
    await dispatcher.drain(30)
    for key in keys:
        await outbox.put(key, text=f"{key} approved")
    await dispatcher.drain(60)
    for key in keys:
        (message,) = with_key(all_messages(sandbox), key)
        assert message["text"] == f"{key} approved"
    assert sandbox.limits.calls["chat.update"] == 12
    assert sandbox.limits.ratelimited_total == 0
    assert dispatcher.stats.paced >= 6, dispatcher.stats
    assert dispatcher.stats.released == 0, dispatcher.stats


async def test_a_stopping_dispatcher_hands_back_the_sends_waiting_for_their_pace_at_once(
    outbox: Outbox, make_sandbox: SandboxFactory, make_dispatcher: DispatcherFactory
) -> None:
    """Ten posts in one channel (about one a second there): a stop does not sit out the
    pace of those still waiting for their slot (they have sent nothing); they go back to
    the outbox at once, and the next dispatcher posts each of them once."""
    sandbox = await make_sandbox(rate_limits=True)
    first = await make_dispatcher(outbox, sandbox, max_pace_wait=5.0)
    keys = [f"root:{i}" for i in range(10)]
    for key in keys:
        await outbox.put(key, channel="C_A", text=key)
    await sandbox.wait_for(lambda sb: len(sb.calls_to("chat.postMessage")) >= 1, timeout=5)
    started = time.monotonic()
    await first.stop(grace=5.0)
    took = time.monotonic() - started
    assert took < 1.0, took
    posted = len(sandbox.calls_to("chat.postMessage"))
    assert posted < len(keys)  # some were still waiting for their slot
    second = await make_dispatcher(outbox, sandbox)
    await second.drain(30)
    for key in keys:  # (the new dispatcher's pace starts afresh: a 429 or so may come)
        assert len(with_key(all_messages(sandbox), key)) == 1, key
    assert second.stats.adopted == 0  # none handed back was unsure: nothing had been sent


@pytest.mark.parametrize("mode", ["503", "refuse"])
async def test_an_outage_then_every_message_once(
    mode: str, outbox: Outbox, make_sandbox: SandboxFactory, make_dispatcher: DispatcherFactory
) -> None:
    sandbox = await make_sandbox()
    dispatcher = await make_dispatcher(outbox, sandbox, call_timeout=2.0, lease_seconds=10.0)
    for i in range(5):
        await outbox.put(f"card:{i}", channel=CHANNELS[i % 4], text=f"card {i}")
    await dispatcher.drain(10)
    await sandbox.outage(3.0, mode=mode)
    outage_over = time.monotonic() + 3.0
    for i in range(10):  # decisions during the outage: updates, and new cards
        await outbox.put(f"card:{i}", channel=CHANNELS[i % 4], text=f"card {i} approved")
    await asyncio.sleep(3.2)
    await dispatcher.drain(30)
    converged = time.monotonic() - outage_over
    messages = all_messages(sandbox)
    for i in range(10):
        (message,) = with_key(messages, f"card:{i}")
        assert message["text"] == f"card {i} approved"
    print(
        f"\noutage {mode} 3s: converged {converged:.1f}s after, "
        f"outage errors={dispatcher.stats.outage_errors}"
    )
    assert dispatcher.stats.outage_errors >= 1
    assert converged < 10


async def test_a_crash_between_the_post_and_its_record_posts_once(
    outbox: Outbox, make_sandbox: SandboxFactory, make_dispatcher: DispatcherFactory
) -> None:
    """Replica A posts; Slack has the message but A dies before it hears the answer. B takes
    the row over once A's claim expires, finds the message by its metadata, adopts it."""
    sandbox = await make_sandbox()
    await outbox.put("root:r1", channel="C_A", text="deploy v2")  # the thread
    root = await make_dispatcher(outbox, sandbox)
    await root.drain(10)
    await root.stop()
    root_ts = await outbox.ts_of("root:r1")
    sandbox.slow_next("chat.postMessage", 5.0)
    await outbox.put("card:q1", channel="C_A", thread_key="root:r1", text="approve?")
    await outbox.put("card:q2", channel="C_A", text="top level")
    sandbox.slow_next("chat.postMessage", 5.0)
    a = await make_dispatcher(
        outbox, sandbox, lease_seconds=2.0, call_timeout=1.5, lease_margin=0.2, sender_lease=1.0
    )
    await sandbox.wait_for(lambda sb: len(sb.calls_to("chat.postMessage")) == 3, timeout=5)
    await a.abort()  # kill -9: no mark, no release
    await outbox.put("card:q1", channel="C_A", text="approved by Avery")  # a newer version
    b = await make_dispatcher(
        outbox, sandbox, lease_seconds=2.0, call_timeout=1.5, lease_margin=0.2, sender_lease=1.0
    )
    await b.drain(15)
    assert len(sandbox.calls_to("chat.postMessage")) == 3  # nothing posted again
    assert b.stats.adopted == 2
    (card,) = with_key(sandbox.thread("C_A", str(root_ts)), "card:q1")
    assert card["text"] == "approved by Avery"  # adopted, then updated to the latest
    assert await outbox.ts_of("card:q1") == card["ts"]
    (top,) = with_key(sandbox.messages("C_A"), "card:q2")
    assert await outbox.ts_of("card:q2") == top["ts"]
    assert [c.method for c in sandbox.calls[3:]] == [
        "conversations.replies",
        "conversations.history",
        "chat.update",
    ] or sorted(c.method for c in sandbox.calls[3:]) == [
        "chat.update",
        "conversations.history",
        "conversations.replies",
    ]


async def test_a_post_that_timed_out_is_looked_up_not_repeated(
    outbox: Outbox, make_sandbox: SandboxFactory, make_dispatcher: DispatcherFactory
) -> None:
    sandbox = await make_sandbox()
    sandbox.slow_next("chat.postMessage", 2.0)
    dispatcher = await make_dispatcher(
        outbox, sandbox, lease_seconds=5.0, call_timeout=0.5, lease_margin=0.5
    )
    await outbox.put("card:q1", channel="C_A", text="approve?")
    await dispatcher.drain(15)
    assert len(with_key(all_messages(sandbox), "card:q1")) == 1
    assert len(sandbox.calls_to("chat.postMessage")) == 1
    assert dispatcher.stats.adopted == 1


@pytest.mark.postgres
@pytest.mark.parametrize("exclusive", [True, False])
async def test_two_replicas_on_postgresql_send_each_row_once(
    exclusive: bool,
    pg_url: str,
    make_db: DbFactory,
    make_sandbox: SandboxFactory,
    make_dispatcher: DispatcherFactory,
) -> None:
    """Both replicas dispatch (`exclusive=False`: both send, each at half the rates; else one
    holds the sender lease and the other stands by): every row is sent once."""
    sandbox = await make_sandbox()
    boxes = [Outbox(await make_db(pg_url)) for _ in range(2)]
    replicas = [
        await make_dispatcher(
            box,
            sandbox,
            owner=f"replica{i}",
            concurrency=4,
            exclusive=exclusive,
            share=0.95 if exclusive else 0.45,
        )
        for i, box in enumerate(boxes)
    ]
    for i in range(12):
        await boxes[i % 2].put(f"card:{i}", channel=CHANNELS[i % 4], text=f"card {i}")
    await replicas[0].drain(40)
    for i in range(12):
        await boxes[(i + 1) % 2].put(f"card:{i}", text=f"card {i} decided")
    await replicas[1].drain(40)
    messages = all_messages(sandbox)
    for i in range(12):
        (message,) = with_key(messages, f"card:{i}")
        assert message["text"] == f"card {i} decided"
    assert len(sandbox.calls_to("chat.postMessage")) == 12
    assert len(sandbox.calls_to("chat.update")) == 12
    senders = [r for r in replicas if r.stats.sent > 0]
    assert len(senders) == (1 if exclusive else 2)


@pytest.mark.postgres
async def test_a_standby_replica_takes_over_when_the_sender_dies(
    pg_url: str,
    make_db: DbFactory,
    make_sandbox: SandboxFactory,
    make_dispatcher: DispatcherFactory,
) -> None:
    sandbox = await make_sandbox(rate_limits=True)
    boxes = [Outbox(await make_db(pg_url)) for _ in range(2)]
    quick = {"sender_lease": 2.0, "lease_seconds": 5.0, "call_timeout": 2.0, "lease_margin": 1.0}
    first = await make_dispatcher(boxes[0], sandbox, owner="first", **quick)
    await sandbox.wait_for(lambda _: first.leading, timeout=5)
    second = await make_dispatcher(boxes[1], sandbox, owner="second", **quick)
    for i in range(12):  # 12 posts in one channel: about 10 s at 1/s
        await boxes[i % 2].put(f"answer:r1:{i}", channel="C_A", text=f"part {i}")
    await sandbox.wait_for(lambda sb: len(sb.calls_to("chat.postMessage")) >= 3, timeout=10)
    assert not second.leading and second.stats.sent == 0
    await first.abort()  # kill -9 of the sender
    await second.drain(40)
    assert second.leading and second.stats.sent > 0
    messages = sandbox.messages("C_A")
    for i in range(12):
        assert len(with_key(messages, f"answer:r1:{i}")) == 1
    assert sandbox.limits.ratelimited_total == 0


@pytest.mark.timeout(60)
async def test_full_slots_never_freeze_the_event_loop(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    """Every slot busy with a slow call while another row is put: the dispatcher waits for a
    slot to free, giving the event loop its turns (it once spun without yielding once its
    next due time had passed, freezing the whole process, the slow call's answer included)."""
    sandbox.slow_next("chat.postMessage", 3.0)
    dispatcher = await make_dispatcher(outbox, sandbox, concurrency=1, sweep_interval=1.0)
    await outbox.put("card:slow", channel="C_A", text="slow")
    await sandbox.wait_for(lambda sb: sb.calls_to("chat.postMessage"), timeout=5)
    await outbox.put("card:next", channel="C_B", text="next")  # no slot free for it
    gaps: list[float] = []
    last = time.monotonic()
    for _ in range(50):  # 2.5 s of heartbeats: the loop must keep turning
        await asyncio.sleep(0.05)
        now = time.monotonic()
        gaps.append(now - last)
        last = now
    assert max(gaps) < 0.5, f"the event loop stalled for {max(gaps):.2f} s"
    await dispatcher.drain(10)
    assert len(with_key(all_messages(sandbox), "card:next")) == 1
