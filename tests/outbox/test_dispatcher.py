"""The dispatcher against a real SlackSandbox on 127.0.0.1 and a real database: messages in
order and once, coalescing during a rate limit, App Home, ephemerals, streams."""

from __future__ import annotations

import asyncio

from bot.sandbox import SlackSandbox
from store.outbox import Outbox, OutboxRow
from tests.outbox.conftest import DispatcherFactory, all_messages, with_key


def section(text: str) -> list[dict[str, object]]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]


async def test_a_root_its_card_and_an_update_land_in_order_once(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    # the card is put first: it waits for its thread's root message
    await outbox.put("card:q1", channel="C_OPS", thread_key="root:r1", blocks=section("card"))
    await outbox.put("root:r1", channel="C_OPS", text="deploy v2", blocks=section("working"))
    posted: list[tuple[str, str]] = []

    async def on_posted(row: OutboxRow, ts: str) -> None:  # the service records run threads
        posted.append((row.key, ts))

    dispatcher = await make_dispatcher(outbox, sandbox, on_posted=on_posted)
    await dispatcher.drain(10)
    root_ts = await outbox.ts_of("root:r1")
    card_ts = await outbox.ts_of("card:q1")
    assert root_ts and card_ts
    assert posted == [("root:r1", root_ts), ("card:q1", card_ts)]
    thread = sandbox.thread("C_OPS", root_ts)
    assert [m["ts"] for m in thread] == [root_ts, card_ts]
    assert thread[0]["metadata"] == {
        "event_type": "sayso_outbox",
        "event_payload": {"key": "root:r1", "version": 1},
    }
    await outbox.put("card:q1", channel="C_OPS", blocks=section("approved by Avery"))
    await dispatcher.drain(10)
    card = sandbox.message("C_OPS", card_ts)
    assert card is not None and card["blocks"][0]["text"]["text"] == "approved by Avery"
    assert [c.method for c in sandbox.calls] == [
        "chat.postMessage",
        "chat.postMessage",
        "chat.update",
    ]


async def test_ten_changes_during_a_rate_limit_become_one_update(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    await outbox.put("root:r1", channel="C_OPS", text="status 0")
    dispatcher = await make_dispatcher(outbox, sandbox)
    await dispatcher.drain(10)
    sandbox.fail_next("chat.update", "ratelimited", retry_after=2)
    await outbox.put("root:r1", channel="C_OPS", text="status 1")
    await sandbox.wait_for(lambda sb: sb.calls_to("chat.update"), timeout=5)
    for i in range(2, 12):
        await outbox.put("root:r1", channel="C_OPS", text=f"status {i}")
        await asyncio.sleep(0.05)
    await dispatcher.drain(10)
    updates = sandbox.calls_to("chat.update")
    assert [u.response["ok"] for u in updates] == [False, True]
    assert updates[1].args["text"] == "status 11"
    assert dispatcher.stats.ratelimited == {"chat.update": 1}
    ts = await outbox.ts_of("root:r1")
    assert sandbox.message("C_OPS", str(ts))["text"] == "status 11"  # type: ignore[index]


async def test_app_home_gets_the_latest_view_and_ephemerals_arrive(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    for i in range(5):
        view = {"type": "home", "blocks": section(f"inbox {i}")}
        await outbox.put(
            "home:T:U_APPROVER", kind="home", user="U_APPROVER", payload={"view": view}
        )
    await outbox.put(
        "ephemeral:1",
        kind="ephemeral",
        channel="C_GENERAL",
        user="U_GUEST",
        text="Only Avery may decide.",
        expires_in=120,
    )
    dispatcher = await make_dispatcher(outbox, sandbox)
    await dispatcher.drain(10)
    home = sandbox.home("U_APPROVER")
    assert home is not None and home["blocks"][0]["text"]["text"] == "inbox 4"
    assert len(sandbox.calls_to("views.publish")) == 1
    assert [e["text"] for e in sandbox.ephemerals("U_GUEST")] == ["Only Avery may decide."]


async def test_an_ephemeral_its_person_cannot_see_there_comes_as_one_dm(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    """App Home lists requests of channels a person is not in: a refusal said there fails
    (user_not_in_channel), so it is said in a DM instead, once."""
    sandbox.fail_next("chat.postEphemeral", "user_not_in_channel")
    await outbox.put(
        "ephemeral:2",
        kind="ephemeral",
        channel="C_GENERAL",
        user="U_GUEST",
        text="Only Avery may decide.",
        expires_in=120,
    )
    dispatcher = await make_dispatcher(outbox, sandbox)
    await dispatcher.drain(10)
    dms = [c for c in sandbox.calls_to("chat.postMessage") if c.args.get("channel") == "U_GUEST"]
    assert [(c.response["ok"], c.args["text"]) for c in dms] == [(True, "Only Avery may decide.")]
    assert sandbox.ephemerals("U_GUEST") == []
    assert (await outbox.get("ephemeral:2")).state == "sent"  # type: ignore[union-attr]


async def test_ephemerals_expire_instead_of_arriving_late(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    await sandbox.outage(1.5, mode="503")
    dispatcher = await make_dispatcher(outbox, sandbox)
    await outbox.put(
        "ephemeral:late",
        kind="ephemeral",
        channel="C_GENERAL",
        user="U_GUEST",
        text="too late",
        expires_in=0.5,
    )
    await outbox.put("card:q1", channel="C_GENERAL", text="card")
    await asyncio.sleep(2.0)
    await dispatcher.drain(15)
    assert sandbox.ephemerals("U_GUEST") == []
    assert dispatcher.stats.expired == 1
    assert len(with_key(all_messages(sandbox), "card:q1")) == 1
    assert (await outbox.get("ephemeral:late")).state == "dropped"  # type: ignore[union-attr]


async def test_a_streamed_answer_starts_grows_and_stops_with_its_blocks(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    root = (await sandbox.post_message("U_REQUESTER", "deploy", channel="D_REQUESTER")).ts
    dispatcher = await make_dispatcher(outbox, sandbox)
    text = ""
    for word in ["Deployed ", "v2 ", "to ", "staging."]:
        text += word
        await outbox.put(
            "answer:r1:0",
            kind="stream",
            channel="D_REQUESTER",
            thread_ts=root,
            payload={"markdown_text": text},
        )
        await asyncio.sleep(0.1)
    await outbox.put(
        "answer:r1:0",
        kind="stream",
        channel="D_REQUESTER",
        thread_ts=root,
        payload={"markdown_text": text, "final": True, "blocks": section("**Deployed**")},
    )
    await dispatcher.drain(10)
    ts = await outbox.ts_of("answer:r1:0")
    message = sandbox.message("D_REQUESTER", str(ts))
    assert message is not None and not message.get("streaming")
    assert message["text"] == "Deployed v2 to staging."
    assert message["blocks"][0]["text"]["text"] == "**Deployed**"
    assert "markdown_text" not in message  # the formatted answer replaced the streamed text
    assert len(sandbox.calls_to("chat.startStream")) == 1
    (stop,) = sandbox.calls_to("chat.stopStream")
    assert "blocks" not in stop.args  # Slack shows them below the streamed text: twice
    assert [c.args["ts"] for c in sandbox.calls_to("chat.update")] == [ts]


async def test_a_stream_stopped_by_a_lost_attempt_still_gets_its_answer(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    root = (await sandbox.post_message("U_REQUESTER", "deploy", channel="D_REQUESTER")).ts
    dispatcher = await make_dispatcher(outbox, sandbox)
    where = {"kind": "stream", "channel": "D_REQUESTER", "thread_ts": root}
    await outbox.put("answer:r1:0", **where, payload={"markdown_text": "Deployed"})
    await dispatcher.drain(10)
    ts = str(await outbox.ts_of("answer:r1:0"))
    streamed = sandbox.message("D_REQUESTER", ts)
    assert streamed is not None and streamed.get("streaming")
    streamed.pop("streaming")  # an earlier attempt stopped it; its answer never came back
    sandbox.fail_next("chat.update", "internal_error")  # and the update fails once
    final = {"markdown_text": "Deployed", "final": True, "blocks": section("**Deployed**")}
    await outbox.put("answer:r1:0", **where, payload=final)
    await dispatcher.drain(15)
    message = sandbox.message("D_REQUESTER", ts)
    assert message is not None and message["blocks"][0]["text"]["text"] == "**Deployed**"
    assert len(sandbox.calls_to("chat.stopStream")) == 1  # not stopped again after the update
    assert len([c for c in sandbox.calls_to("chat.update") if c.response.get("ok")]) == 1


async def test_a_refused_stream_becomes_one_message_when_final(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    sandbox.refuse_streaming = True
    root = (await sandbox.post_message("U_REQUESTER", "deploy", channel="D_REQUESTER")).ts
    dispatcher = await make_dispatcher(outbox, sandbox)
    await outbox.put(
        "answer:r1:0",
        kind="stream",
        channel="D_REQUESTER",
        thread_ts=root,
        payload={"markdown_text": "Deploy"},
    )
    await dispatcher.drain(10)
    await outbox.put(
        "answer:r1:0",
        kind="stream",
        channel="D_REQUESTER",
        thread_ts=root,
        payload={"markdown_text": "Deployed.", "final": True, "blocks": section("Deployed.")},
    )
    await dispatcher.drain(10)
    (answer,) = with_key(sandbox.thread("D_REQUESTER", str(root)), "answer:r1:0")
    assert answer["blocks"][0]["text"]["text"] == "Deployed."


async def test_a_dispatcher_stopped_and_started_again_sends_again(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    dispatcher = await make_dispatcher(outbox, sandbox)
    await outbox.put("root:r1", channel="C_OPS", text="before")
    await dispatcher.drain(10)
    await dispatcher.stop()
    await dispatcher.start()
    await outbox.put("root:r2", channel="C_OPS", text="after the restart")
    await dispatcher.drain(10)
    assert [m["text"] for m in sandbox.messages("C_OPS")] == ["before", "after the restart"]


async def test_a_change_put_while_its_message_is_being_sent_follows_at_once(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    # the row is claimed (its update in flight) when the next change is put: once the first
    # update is recorded, the second goes without waiting for anything else to wake the
    # dispatcher (not `drain`, which wakes it itself)
    await outbox.put("root:r1", channel="C_OPS", text="status 0")
    dispatcher = await make_dispatcher(outbox, sandbox, sweep_interval=2.0)
    await dispatcher.drain(10)
    sandbox.slow_next("chat.update", 0.5)
    await outbox.put("root:r1", channel="C_OPS", text="status 1")
    await sandbox.wait_for(lambda sb: sb.calls_to("chat.update"), timeout=5)
    await outbox.put("root:r1", channel="C_OPS", text="status 2")
    ts = str(await outbox.ts_of("root:r1"))

    def shows_status_2(sb: SlackSandbox) -> bool:
        return (sb.message("C_OPS", ts) or {}).get("text") == "status 2"

    await sandbox.wait_for(shows_status_2, timeout=1.5)


async def test_the_calls_share_one_kept_alive_connection(
    outbox: Outbox, sandbox: SlackSandbox, make_dispatcher: DispatcherFactory
) -> None:
    """slack-sdk opens a session, and a TCP connection, per call unless given one: the
    dispatcher gives its client one, so calls one after the other reuse a connection."""
    dispatcher = await make_dispatcher(outbox, sandbox)
    await outbox.put("root:r1", channel="C_OPS", text="deploy v2")
    await dispatcher.drain(10)
    for i in range(4):
        await outbox.put(f"note:{i}", channel="C_OPS", thread_key="root:r1", text=f"step {i}")
        await dispatcher.drain(10)
    await outbox.put("root:r1", channel="C_OPS", text="deploy v2: done")
    await dispatcher.drain(10)
    calls = sandbox.calls
    assert [c.method for c in calls] == ["chat.postMessage"] * 5 + ["chat.update"]
    assert all(c.connection for c in calls)
    assert len({c.connection for c in calls}) == 1, [c.connection for c in calls]
