"""What people do in the sandbox reaches a bot as signed Slack requests, with Slack's effects."""

from __future__ import annotations

import pytest
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.sandbox import SlackSandbox


async def post_card(client: AsyncWebClient, kit, **extra) -> str:
    sent = await client.chat_postMessage(
        channel="C_GENERAL", text="Approval needed", blocks=kit.card_blocks(), **extra
    )
    return sent["ts"]


async def test_deliveries_are_signed_as_slack_signs(sandbox: SlackSandbox, tiny_bot) -> None:
    delivery = await sandbox.slash_command("U_REQUESTER", "ops deploy v2")
    assert delivery.status == 200 and tiny_bot.received[0].signature_ok
    headers = tiny_bot.received[0].headers
    assert headers["X-Slack-Signature"].startswith("v0=")
    assert headers["X-Slack-Request-Timestamp"].isdigit()


async def test_wrong_secret_does_not_verify(tiny_bot) -> None:
    other = SlackSandbox(signing_secret="not-the-bots-secret", bot_url=tiny_bot.url)
    await other.start()
    try:
        delivery = await other.post_message("U_REQUESTER", "hello")
    finally:
        await other.stop()
    assert tiny_bot.received[-1].signature_ok is False
    assert delivery.status == 401 and not delivery.ok


async def test_slash_command_form_and_ephemeral_ack(sandbox: SlackSandbox, tiny_bot) -> None:
    tiny_bot.reply = lambda r: (200, {"text": "Starting ops…"})
    delivery = await sandbox.slash_command("U_REQUESTER", "ops deploy v2", channel="C_GENERAL")
    form = tiny_bot.received[0].form
    assert form["command"] == "/sayso" and form["text"] == "ops deploy v2"
    assert form["user_id"] == "U_REQUESTER" and form["channel_id"] == "C_GENERAL"
    assert form["team_id"] == "T_SANDBOX" and form["trigger_id"] == delivery.trigger_id
    assert form["response_url"].startswith(sandbox.url)
    assert {"token", "team_domain", "channel_name", "user_name", "api_app_id"} <= set(form)
    assert [e["text"] for e in sandbox.ephemerals("U_REQUESTER")] == ["Starting ops…"]
    assert sandbox.ephemerals("U_APPROVER") == [] and sandbox.messages() == []

    tiny_bot.reply = lambda r: (200, {"response_type": "in_channel", "text": "public"})
    await sandbox.slash_command("U_REQUESTER", "ops status")
    assert [m["text"] for m in sandbox.messages()] == ["public"]


async def test_slash_command_respond_via_response_url(sandbox: SlackSandbox, tiny_bot) -> None:
    await sandbox.slash_command("U_REQUESTER", "help")
    webhook = AsyncWebhookClient(tiny_bot.received[0].form["response_url"])
    answer = await webhook.send(text="Here is how to use sayso")
    assert answer.status_code == 200 and answer.body == "ok"
    assert sandbox.ephemerals("U_REQUESTER")[0]["text"] == "Here is how to use sayso"


async def test_slow_or_missing_bot_shows_slacks_error(sandbox: SlackSandbox, tiny_bot) -> None:
    sandbox._deliverer.ack_timeout = 0.2
    tiny_bot.delay = 0.4
    tiny_bot.reply = lambda r: (200, {"text": "too late"})
    delivery = await sandbox.slash_command("U_REQUESTER", "ops deploy")
    assert delivery.timed_out and delivery.duration >= 0.4
    assert sandbox.ephemerals("U_REQUESTER")[0]["text"] == (
        '/sayso failed with the error "operation_timeout"'
    )
    sandbox.bot_url = "http://127.0.0.1:9/nothing-listens-here"
    failed = await sandbox.slash_command("U_REQUESTER", "ops deploy")
    assert failed.status == 0 and failed.error


async def test_click_sends_block_actions_like_slack(
    sandbox: SlackSandbox, tiny_bot, client, kit
) -> None:
    root = await client.chat_postMessage(channel="C_GENERAL", text="run")
    ts = await post_card(client, kit, thread_ts=root["ts"])
    delivery = await sandbox.click("U_APPROVER", "C_GENERAL", ts, "approve")
    assert delivery.ok
    payload = tiny_bot.received[0].payload
    assert payload["type"] == "block_actions"
    assert payload["user"] == {
        "id": "U_APPROVER",
        "username": "avery",
        "name": "avery",
        "team_id": "T_SANDBOX",
    }
    assert payload["team"]["id"] == "T_SANDBOX" and payload["api_app_id"] == "A_SAYSO"
    assert payload["container"] == {
        "type": "message",
        "message_ts": ts,
        "channel_id": "C_GENERAL",
        "is_ephemeral": False,
        "thread_ts": root["ts"],
    }
    assert payload["channel"] == {"id": "C_GENERAL", "name": "general"}
    assert payload["message"]["ts"] == ts and payload["message"]["thread_ts"] == root["ts"]
    assert payload["message"]["blocks"][4]["block_id"] == "decision"
    (action,) = payload["actions"]
    assert action["action_id"] == "approve" and action["block_id"] == "decision"
    assert action["value"] == "call-1" and action["type"] == "button"
    assert action["style"] == "primary" and action["text"]["text"] == "Approve"
    assert payload["trigger_id"] == delivery.trigger_id and payload["state"] == {"values": {}}
    assert payload["response_url"].startswith(sandbox.url)

    # The bot may open a modal with that trigger_id within 3 s.
    opened = await client.views_open(trigger_id=payload["trigger_id"], view=kit.modal())
    assert sandbox.open_views("U_APPROVER")[0]["id"] == opened["view"]["id"]

    # response_url replace_original rewrites the card in place.
    await AsyncWebhookClient(payload["response_url"]).send(
        text="Approved by Avery", replace_original=True, blocks=[]
    )
    assert sandbox.message("C_GENERAL", ts)["text"] == "Approved by Avery"

    with pytest.raises(LookupError, match="no element with action_id 'nope'"):
        await sandbox.click("U_APPROVER", "C_GENERAL", ts, "nope")


async def test_click_in_ephemeral_and_home(sandbox: SlackSandbox, tiny_bot, client, kit) -> None:
    sent = await client.chat_postEphemeral(
        channel="C_GENERAL", user="U_REQUESTER", text="card", blocks=kit.card_blocks()
    )
    with pytest.raises(LookupError):
        await sandbox.click("U_APPROVER", "C_GENERAL", sent["message_ts"], "approve")
    await sandbox.click("U_REQUESTER", "C_GENERAL", sent["message_ts"], "reject")
    payload = tiny_bot.received[-1].payload
    assert payload["container"]["is_ephemeral"] is True and "message" not in payload

    home = {"type": "home", "blocks": kit.card_blocks()}
    await client.views_publish(user_id="U_APPROVER", view=home)
    await sandbox.click_home("U_APPROVER", "approve")
    payload = tiny_bot.received[-1].payload
    assert payload["container"]["type"] == "view" and payload["view"]["type"] == "home"

    opened = await sandbox.open_home("U_APPROVER")
    event = tiny_bot.received[-1].event["event"]
    assert opened.ok and event["type"] == "app_home_opened" and event["tab"] == "home"
    assert event["view"]["id"] == sandbox.home("U_APPROVER")["id"]


async def open_modal(sandbox: SlackSandbox, client, kit, **extra) -> str:
    trigger = sandbox.issue_trigger("U_APPROVER")
    return (await client.views_open(trigger_id=trigger, view=kit.modal(**extra)))["view"]["id"]


async def test_view_submission_errors_keep_the_view_open(
    sandbox: SlackSandbox, tiny_bot, client, kit
) -> None:
    view_id = await open_modal(sandbox, client, kit)
    tiny_bot.reply = lambda r: (
        200,
        {"response_action": "errors", "errors": {"reason": "Say why in 10+ characters"}},
    )
    delivery = await sandbox.submit_view(
        "U_APPROVER", view_id, {"reason": "short", "env": "production"}
    )
    assert delivery.ok and sandbox.view_is_open(view_id)
    assert sandbox.view_errors(view_id) == {"reason": "Say why in 10+ characters"}
    view = tiny_bot.received[0].payload["view"]
    assert tiny_bot.received[0].payload["type"] == "view_submission"
    assert view["id"] == view_id and view["callback_id"] == "edit_call"
    assert view["private_metadata"] == '{"call_id": "call-1"}' and view["hash"]
    assert view["state"]["values"]["reason"] == {
        "text": {"type": "plain_text_input", "value": "short"}
    }
    assert view["state"]["values"]["env"]["pick"]["selected_option"]["value"] == "production"

    tiny_bot.reply = lambda r: (200, {"response_action": "clear"})
    await sandbox.submit_view("U_APPROVER", view_id, {"reason": "long enough reason"})
    assert sandbox.open_views("U_APPROVER") == [] and not sandbox.view_is_open(view_id)


async def test_view_submission_update_push_and_close(
    sandbox: SlackSandbox, tiny_bot, client, kit
) -> None:
    view_id = await open_modal(sandbox, client, kit, notify_on_close=True)
    refused = await sandbox.submit_view("U_APPROVER", view_id, {})
    assert refused.error == "client_validation" and tiny_bot.received == []
    assert sandbox.view_errors(view_id) == {"reason": "Please fill out this field."}

    tiny_bot.reply = lambda r: (
        200,
        {"response_action": "update", "view": kit.modal("Step 2", notify_on_close=True)},
    )
    await sandbox.submit_view("U_APPROVER", view_id, {"reason": "because"})
    assert sandbox.view(view_id)["title"]["text"] == "Step 2" and sandbox.view_is_open(view_id)

    tiny_bot.reply = lambda r: (200, {"response_action": "push", "view": kit.modal("Sure?")})
    pushed = await sandbox.submit_view("U_APPROVER", view_id, {"reason": "because"})
    assert [v["title"]["text"] for v in sandbox.open_views("U_APPROVER")] == ["Step 2", "Sure?"]

    tiny_bot.reply = lambda r: (200, None)
    await sandbox.submit_view("U_APPROVER", pushed.view_id, {"reason": "yes"})
    assert [v["id"] for v in sandbox.open_views("U_APPROVER")] == [view_id]

    closed = await sandbox.close_view("U_APPROVER", view_id)
    assert closed is not None and tiny_bot.received[-1].payload["type"] == "view_closed"
    assert sandbox.open_views("U_APPROVER") == []


async def test_message_and_app_mention_events(sandbox: SlackSandbox, tiny_bot) -> None:
    plain = await sandbox.post_message("U_REQUESTER", "just chatting")
    mention = await sandbox.post_message("U_REQUESTER", "<@U_SAYSO> ops status")
    kinds = [r.kind for r in tiny_bot.received]
    assert kinds == ["message", "app_mention", "message"]
    envelope = tiny_bot.received[1].event
    assert envelope["type"] == "event_callback" and envelope["team_id"] == "T_SANDBOX"
    assert envelope["api_app_id"] == "A_SAYSO" and envelope["event_time"] > 0
    assert envelope["authorizations"][0]["user_id"] == "U_SAYSO"
    assert envelope["event_id"] == mention.event_id
    event = tiny_bot.received[2].event["event"]
    assert event["channel"] == "C_GENERAL" and event["user"] == "U_REQUESTER"
    assert event["ts"] == mention.ts == event["event_ts"] and event["channel_type"] == "channel"
    ids = {r.event["event_id"] for r in tiny_bot.received}
    assert len(ids) == 3 and plain.event_id in ids

    reply = await sandbox.post_message("U_APPROVER", "ok", thread_ts=plain.ts)
    event = tiny_bot.received[-1].event["event"]
    assert event["thread_ts"] == plain.ts and event["ts"] == reply.ts
    assert [m["text"] for m in sandbox.thread("C_GENERAL", plain.ts)] == ["just chatting", "ok"]


async def test_redeliver_carries_retry_headers(sandbox: SlackSandbox, tiny_bot) -> None:
    first = await sandbox.post_message("U_REQUESTER", "hello")
    again = await sandbox.redeliver(first.event_id, retry_num=2)
    original, retry = tiny_bot.received
    assert retry.raw == original.raw and retry.signature_ok
    assert retry.headers["X-Slack-Retry-Num"] == "2"
    assert retry.headers["X-Slack-Retry-Reason"] == "http_timeout"
    assert "X-Slack-Retry-Num" not in original.headers and again.event_id == first.event_id


async def test_bot_messages_come_back_only_when_asked(
    sandbox: SlackSandbox, tiny_bot, client
) -> None:
    await client.chat_postMessage(channel="C_GENERAL", text="quiet")
    sandbox.deliver_bot_messages = True
    await client.chat_postMessage(channel="C_GENERAL", text="echo")
    await sandbox.wait_for(lambda sb: tiny_bot.received)
    (echo,) = tiny_bot.received
    event = echo.event["event"]
    assert event["bot_id"] == "B_SAYSO" and event["subtype"] == "bot_message"
    assert event["text"] == "echo"
