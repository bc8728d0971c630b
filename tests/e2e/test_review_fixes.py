"""Regressions found in review: runs told they failed must not run; leases must hold."""

from __future__ import annotations

import asyncio
import json

from tests.e2e.conftest import Harness


async def test_a_run_whose_root_message_could_not_be_posted_never_runs(harness: Harness) -> None:
    h = harness
    h.model.reply(text="Staging is healthy.")
    h.sandbox.fail_next("chat.postMessage", "not_in_channel")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_REQUESTER"))
    assert "/invite" in json.dumps(h.sandbox.ephemerals("U_REQUESTER"))
    for _ in range(3):  # the sweeps of the next seconds leave it alone
        await h.bot.service.sweep_once()
        await asyncio.sleep(0.3)
    await h.idle()
    assert h.model.requests == []  # the person was told it did not start: nothing ran
    runs = await h.bot.store.list_runs()
    assert all(r.status != "running" for r in runs)


async def test_one_failed_lease_renewal_does_not_hand_a_running_tool_to_another_process(
    harness: Harness,
) -> None:
    """A renewal can fail once (a database blip, or a save that advanced the version while
    the renewal was in flight): the holder must keep renewing while a long body runs, or the
    sweep takes the run over and shows the running call as interrupted."""
    from tests.e2e.test_approve_flow import start_deploy
    from tests.e2e.test_decisions import wait_answer

    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_lease_seconds": 1}
    await h.start_bot()
    assert h.bot is not None
    store = h.bot.store
    real_renew = store.renew
    blips: list[str] = []

    async def renew_once_failing(lease):  # type: ignore[no-untyped-def]
        if not blips:
            blips.append(lease.run_id)
            raise ConnectionResetError("connection to the database was reset")
        return await real_renew(lease)

    store.renew = renew_once_failing  # type: ignore[method-assign]
    tool = h.bot.service.agents.tool("ops", "deploy")
    body = tool.fn

    async def slow_body(**kw: object) -> dict:
        result = await body(**kw)
        await asyncio.sleep(3)  # a deploy takes a while: three lease lengths
        return result

    tool.fn = slow_body
    try:
        card = await start_deploy(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        await wait_answer(h, "Deployed v2 to staging.")
    finally:
        tool.fn = body
    assert blips
    assert "interrupted" not in h.thread_text().lower()  # the call was still running
    assert h.cards() == []  # nothing left asking for a decision
    assert len(h.effects.deploys) == 1
    run = (await store.list_runs())[0]
    assert run.status == "completed"


async def test_an_expired_review_tells_the_model_nobody_reviewed(harness: Harness) -> None:
    from tests.e2e.test_threads_and_home import start_review, user_messages

    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_approval_ttl": "1s"}
    await h.start_bot()
    await start_review(h)
    await h.sandbox.wait_for(lambda sb: len(h.model.requests) == 2, timeout=15)
    await h.idle()
    said = user_messages(h)[-1]
    assert said != "null"  # not a reviewer's words: nobody answered
    assert "expired" in said


async def test_a_reply_also_sent_to_the_channel_answers_the_question(harness: Harness) -> None:
    """A reply with "Also send to #channel" is a `thread_broadcast` message: still a reply."""
    from tests.e2e.test_decisions import wait_answer

    h = harness
    h.model.reply(tool_calls=[("ask_user", {"question": "Which region?"})])
    h.model.reply(text="Using eu-west-1.")
    await h.sandbox.slash_command("U_REQUESTER", "ops set up the region")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    root = h.root()["ts"]
    await h.sandbox.send_event(
        {
            "type": "message",
            "subtype": "thread_broadcast",
            "user": "U_REQUESTER",
            "text": "eu-west-1",
            "ts": "1999999999.000100",
            "thread_ts": root,
            "channel": "C_GENERAL",
            "channel_type": "channel",
            "team": "T_SANDBOX",
            "event_ts": "1999999999.000100",
        }
    )
    await wait_answer(h, "Using eu-west-1.")
    tool_msgs = [m for m in h.model.last_request["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"] == "eu-west-1"


async def test_a_refusal_reaches_a_person_who_cannot_see_the_requests_channel(
    harness: Harness,
) -> None:
    """App Home lists requests of channels the person is not in: an ephemeral there fails
    (user_not_in_channel), so the answer comes as a direct message instead of nothing."""
    from tests.e2e.test_approve_flow import start_deploy
    from tests.e2e.test_decisions import card_request_id, wait_answer

    h = harness
    card = await start_deploy(h)
    await h.sandbox.open_home("U_APPROVER2")
    await h.sandbox.wait_for(lambda sb: sb.home("U_APPROVER2"))
    await h.idle()
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Deployed v2 to staging.")
    h.sandbox.fail_next("chat.postEphemeral", "user_not_in_channel")
    await h.sandbox.click_home("U_APPROVER2", "approve", value=card_request_id(card))
    await h.sandbox.wait_for(
        lambda sb: any("already approved" in m.get("text", "") for m in sb.messages("D_APPROVER2"))
    )
    assert len(h.effects.deploys) == 1
