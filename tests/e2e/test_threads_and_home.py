"""Human review (modal, thread reply, expiry); questions answered by a thread reply (one also
sent to the channel, one Slack delivers twice); follow-ups; App Home (and its answers by direct
message); reminders."""

from __future__ import annotations

import json

from tests.e2e.flows import (
    card_request_id,
    start_deploy,
    start_review,
    tool_results,
    user_messages,
    wait_answer,
)
from tests.e2e.harness import Harness, has_button, message_text
from tests.helpers.views import filled_views


async def test_review_by_modal(harness: Harness) -> None:
    h = harness
    card = await start_review(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "review")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    assert view["callback_id"] == "sayso_review"
    block = next(b for b in view["blocks"] if b["type"] == "input")
    assert block["block_id"] == "input" and block["element"]["action_id"] == "value"
    empty = await h.sandbox.submit_view("U_APPROVER", view["id"], {"input": "   "})
    assert empty.status in (0, 200) and h.sandbox.view_is_open(view["id"])
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"input": "Approved, send it."})
    await wait_answer(h, "Reply sent.")
    assert user_messages(h)[-1] == "Approved, send it."
    updated = h.sandbox.message("C_GENERAL", card["ts"])
    assert not has_button(updated, "review") and "<@U_APPROVER>" in message_text(updated)


async def test_review_by_thread_reply_and_who_is_ignored(harness: Harness) -> None:
    h = harness
    card = await start_review(h)
    h.sandbox.deliver_bot_messages = True  # the bot's own posts come back as events
    root = h.root()["ts"]
    await h.sandbox.post_message("U_GUEST", "ship it", thread_ts=root)
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_GUEST"))
    await h.idle()
    assert len(h.model.requests) == 1 and has_button(h.sandbox.message("C_GENERAL", card["ts"]))
    await h.sandbox.post_message("U_APPROVER", "Looks right, send it.", thread_ts=root)
    await wait_answer(h, "Reply sent.")
    assert user_messages(h)[-1] == "Looks right, send it."
    await h.idle()
    assert len(h.model.requests) == 2  # the bot's own messages started nothing
    assert "<@U_APPROVER>" in message_text(h.sandbox.message("C_GENERAL", card["ts"]))


async def test_an_expired_review_tells_the_model_nobody_reviewed(harness: Harness) -> None:
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


async def test_hitl_question_answered_by_thread_reply(harness: Harness) -> None:
    h = harness
    h.model.reply(tool_calls=[("ask_user", {"question": "Which region?"})])
    h.model.reply(text="Using eu-west-1.")
    await h.sandbox.slash_command("U_REQUESTER", "ops set up the region")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    delivery = await h.sandbox.post_message("U_REQUESTER", "eu-west-1", thread_ts=h.root()["ts"])
    await wait_answer(h, "Using eu-west-1.")
    assert tool_results(h)[0]["content"] == "eu-west-1"
    # Slack retries the same event: handled once (no second run, no second decision)
    again = await h.sandbox.redeliver(delivery.event_id, retry_num=1)
    assert again.status == 200
    await h.idle()
    assert len(h.model.requests) == 2
    assert len(await h.bot.store.runs.list()) == 1


async def test_a_reply_also_sent_to_the_channel_answers_the_question(harness: Harness) -> None:
    """A reply with "Also send to #channel" is a `thread_broadcast` message: still a reply."""
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
    assert tool_results(h)[0]["content"] == "eu-west-1"


async def test_reply_after_the_answer_starts_a_follow_up_run(harness: Harness) -> None:
    h = harness
    h.model.reply(text="Staging is healthy.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await wait_answer(h, "Staging is healthy.")
    h.model.reply(text="Production is healthy too.")
    await h.sandbox.post_message("U_REQUESTER", "and production?", thread_ts=h.root()["ts"])
    await wait_answer(h, "Production is healthy too.")
    sent = [m.get("content") for m in h.model.last_request["messages"]]
    assert "ops how is staging" not in sent  # the agent id is not part of the request
    assert "how is staging" in sent and "Staging is healthy." in sent
    assert sent[-1] == "and production?"
    assert len(await h.bot.store.runs.list()) == 2
    assert len(h.sandbox.messages("C_GENERAL")) == 1  # one thread, one conversation


async def test_app_home_lists_what_the_viewer_may_decide(harness: Harness) -> None:
    h = harness
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v2"})])
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    h.model.reply(tool_calls=[("restart", {"service": "api"})])
    await h.sandbox.slash_command("U_REQUESTER", "ops restart api")
    await h.sandbox.wait_for(lambda sb: len(sb.messages("C_GENERAL")) == 2 and len(h.cards()) == 1)
    await h.idle()
    h.model.reply(text="Deployed.")

    def home_buttons(user: str) -> list[str]:
        view = h.sandbox.home(user) or {}
        return [
            el.get("action_id")
            for b in view.get("blocks", [])
            if b.get("type") == "actions"
            for el in b.get("elements", [])
        ]

    for user in ("U_APPROVER", "U_MEMBER", "U_GUEST", "U_REQUESTER"):
        await h.sandbox.open_home(user)
    users = ("U_APPROVER", "U_MEMBER", "U_GUEST", "U_REQUESTER")
    await h.sandbox.wait_for(lambda sb: all(sb.home(u) for u in users))
    await h.idle()
    assert home_buttons("U_APPROVER").count("approve") == 2  # deploy (anyone) + restart (group)
    assert home_buttons("U_MEMBER").count("approve") == 1  # deploy only
    assert home_buttons("U_GUEST").count("approve") == 0
    assert home_buttons("U_REQUESTER").count("approve") == 1  # not their own restart
    text = json.dumps(h.sandbox.home("U_REQUESTER"))
    assert "restart api" in text  # their recent runs
    # deciding from App Home works like the card
    d = await h.sandbox.click_home("U_APPROVER", "approve", value=_home_value(h, "deploy"))
    assert d.status == 200
    await h.sandbox.wait_for(lambda sb: len(h.effects.deploys) == 1)


async def test_a_refusal_reaches_a_person_who_cannot_see_the_requests_channel(
    harness: Harness,
) -> None:
    """App Home lists requests of channels the person is not in: an ephemeral there fails
    (user_not_in_channel), so the answer comes as a direct message instead of nothing."""
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


def _home_value(h: Harness, tool: str) -> str:
    """The request id of the App Home card showing `tool`."""
    view = h.sandbox.home("U_APPROVER") or {}
    for b in view.get("blocks", []):
        if b.get("block_id", "").startswith("home_card:") and f"`{tool}`" in json.dumps(b):
            return b["block_id"].split(":", 1)[1]
    raise AssertionError(f"no {tool} card on App Home")


async def test_reminder_mentions_the_approvers_once_before_expiry(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_remind_after": "1s"}
    await h.start_bot()
    h.model.reply(tool_calls=[("restart", {"service": "api"})])
    await h.sandbox.slash_command("U_REQUESTER", "ops restart api")
    await h.sandbox.wait_for(lambda sb: "remind" in h.thread_text().lower(), timeout=10)
    await h.idle()
    reminders = [m for m in h.thread() if "remind" in message_text(m).lower()]
    assert len(reminders) == 1
    assert "S_APPROVERS" in message_text(reminders[0])
