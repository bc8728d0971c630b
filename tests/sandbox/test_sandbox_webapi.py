"""The sandbox's Web API, driven with slack_sdk's AsyncWebClient over real HTTP."""

from __future__ import annotations

import asyncio
import re

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox import SlackSandbox


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


async def api_error(call) -> dict:
    with pytest.raises(SlackApiError) as caught:
        await call
    return caught.value.response.data


async def test_post_message_is_stored_with_slack_ts(sandbox: SlackSandbox, client, kit) -> None:
    first = await client.chat_postMessage(channel="C_GENERAL", text="hi", blocks=kit.card_blocks())
    second = await client.chat_postMessage(channel="C_GENERAL", text="again")
    assert first["ok"] and first["channel"] == "C_GENERAL"
    assert re.fullmatch(r"\d+\.\d{6}", first["ts"])
    assert float(second["ts"]) > float(first["ts"])
    assert first["message"]["bot_id"] == "B_SAYSO"
    assert first["message"]["blocks"][4]["elements"][0]["action_id"] == "approve"
    assert [m["ts"] for m in sandbox.messages("C_GENERAL")] == [first["ts"], second["ts"]]
    assert sandbox.calls_to("chat.postMessage")[0].args["text"] == "hi"


async def test_message_with_51_blocks_is_refused(sandbox: SlackSandbox, client) -> None:
    answer = await api_error(
        client.chat_postMessage(channel="C_GENERAL", text="x", blocks=[section("b")] * 51)
    )
    assert answer["error"] == "invalid_blocks"
    assert any("/blocks]" in e and "50" in e for e in answer["errors"])
    assert sandbox.messages("C_GENERAL") == []
    ok = await client.chat_postMessage(channel="C_GENERAL", text="x", blocks=[section("b")] * 50)
    assert ok["ok"]


async def test_section_over_3000_characters_is_refused(client) -> None:
    answer = await api_error(
        client.chat_postMessage(channel="C_GENERAL", text="x", blocks=[section("a" * 3001)])
    )
    assert answer["error"] == "invalid_blocks"
    assert answer["errors"] == [
        "must be at most 3000 characters (got 3001) [json-pointer:/blocks/0/text/text]"
    ]
    assert (await client.chat_postMessage(channel="C", text="x", blocks=[section("a" * 3000)]))[
        "ok"
    ]


@pytest.mark.filterwarnings("ignore:The top-level `text` argument is missing")
async def test_other_block_kit_limits(client) -> None:
    long_button = {
        "type": "actions",
        "elements": [
            {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "b" * 76}},
            {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "ok"}},
        ],
    }
    header = {"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}
    dup = [{**section("x"), "block_id": "same"}, {**section("y"), "block_id": "same"}]
    answer = await api_error(
        client.chat_postMessage(channel="C_GENERAL", text="x", blocks=[long_button, header, *dup])
    )
    errors = " | ".join(answer["errors"])
    assert "/blocks/0/elements/0/text/text" in errors
    assert "duplicate 'a'" in errors
    assert "/blocks/1/text/text" in errors
    assert "duplicate block_id 'same'" in errors
    too_long = await api_error(client.chat_postMessage(channel="C_GENERAL", text="t" * 40001))
    assert too_long["error"] == "msg_too_long"
    assert (await api_error(client.chat_postMessage(channel="C_GENERAL")))["error"] == "no_text"


async def test_bad_or_missing_token(sandbox: SlackSandbox) -> None:
    bad = AsyncWebClient(base_url=sandbox.api_url, token="xoxb-wrong")
    assert (await api_error(bad.auth_test()))["error"] == "invalid_auth"
    anonymous = AsyncWebClient(base_url=sandbox.api_url)
    assert (await api_error(anonymous.auth_test()))["error"] == "not_authed"
    assert sandbox.calls[0].response == {"ok": False, "error": "invalid_auth"}
    assert "token" not in sandbox.calls[0].args


async def test_auth_test_and_unknown_method(client) -> None:
    me = await client.auth_test()
    assert (me["user_id"], me["bot_id"], me["team_id"]) == ("U_SAYSO", "B_SAYSO", "T_SANDBOX")
    assert (await api_error(client.api_call("nope.never")))["error"] == "unknown_method"


async def test_modal_title_over_24_characters_is_refused(
    sandbox: SlackSandbox, client, kit
) -> None:
    trigger = sandbox.issue_trigger("U_APPROVER")
    answer = await api_error(client.views_open(trigger_id=trigger, view=kit.modal("t" * 25)))
    assert answer["error"] == "invalid_arguments"
    assert answer["response_metadata"]["messages"] == [
        "[ERROR] must be at most 24 characters (got 25) [json-pointer:/view/title/text]"
    ]
    assert sandbox.open_views("U_APPROVER") == []


async def test_valid_modal_opens_updates_and_pushes(sandbox: SlackSandbox, client, kit) -> None:
    trigger = sandbox.issue_trigger("U_APPROVER")
    opened = await client.views_open(trigger_id=trigger, view=kit.modal(external_id="edit-1"))
    view = opened["view"]
    assert view["id"].startswith("V") and view["hash"] and view["callback_id"] == "edit_call"
    assert [v["id"] for v in sandbox.open_views("U_APPROVER")] == [view["id"]]
    conflict = await api_error(
        client.views_update(view_id=view["id"], hash="stale", view=kit.modal("Stale"))
    )
    assert conflict["error"] == "hash_conflict"
    updated = await client.views_update(
        external_id="edit-1", hash=view["hash"], view=kit.modal("Edited")
    )
    assert updated["view"]["id"] == view["id"]
    assert sandbox.view(view["id"])["title"]["text"] == "Edited"
    reused = await api_error(client.views_push(trigger_id=trigger, view=kit.modal("Again")))
    assert reused["error"] == "trigger_exchanged"
    pushed = await client.views_push(
        trigger_id=sandbox.issue_trigger("U_APPROVER"), view=kit.modal()
    )
    assert len(sandbox.open_views("U_APPROVER")) == 2
    assert pushed["view"]["previous_view_id"] == view["id"]


async def test_views_open_with_expired_or_unknown_trigger(
    sandbox: SlackSandbox, client, kit
) -> None:
    sandbox.trigger_ttl = 0.05
    trigger = sandbox.issue_trigger("U_APPROVER")
    await asyncio.sleep(0.1)  # the trigger (0.05 s) must lapse: that is what is tested
    answer = await api_error(client.views_open(trigger_id=trigger, view=kit.modal()))
    assert answer["error"] == "expired_trigger_id"
    unknown = await api_error(client.views_open(trigger_id="1.2.3", view=kit.modal()))
    assert unknown["error"] == "invalid_trigger_id"


async def test_home_publish_and_view_limits(sandbox: SlackSandbox, client, kit) -> None:
    home = {"type": "home", "blocks": [section("Pending approvals: 0")]}
    published = await client.views_publish(user_id="U_APPROVER", view=home)
    assert sandbox.home("U_APPROVER")["id"] == published["view"]["id"]
    assert sandbox.home("U_MEMBER") is None
    too_many = {"type": "home", "blocks": [section("x")] * 101}
    answer = await api_error(client.views_publish(user_id="U_APPROVER", view=too_many))
    assert answer["error"] == "invalid_arguments"
    big_meta = kit.modal(private_metadata="m" * 3001)
    trigger = sandbox.issue_trigger("U_APPROVER")
    answer = await api_error(client.views_open(trigger_id=trigger, view=big_meta))
    assert "/view/private_metadata" in answer["response_metadata"]["messages"][0]


async def test_users_and_groups(client) -> None:
    guest = (await client.users_info(user="U_GUEST"))["user"]
    assert guest["is_restricted"] is True and guest["real_name"] == "Gale Guest"
    external = (await client.users_info(user="U_EXTERNAL"))["user"]
    assert external["team_id"] == "T_OTHER"
    assert (await api_error(client.users_info(user="U_NOBODY")))["error"] == "user_not_found"
    members = (await client.users_list())["members"]
    assert {"U_SAYSO", "U_REQUESTER", "U_APPROVER", "U_MEMBER"} <= {m["id"] for m in members}
    approvers = await client.usergroups_users_list(usergroup="S_APPROVERS")
    assert approvers["users"] == ["U_APPROVER", "U_APPROVER2"]
    missing = await api_error(client.usergroups_users_list(usergroup="S_NONE"))
    assert missing["error"] == "no_such_subteam"


async def test_threads_replies_history_and_edits(sandbox: SlackSandbox, client, kit) -> None:
    root = await client.chat_postMessage(channel="C_GENERAL", text="run started")
    reply = await client.chat_postMessage(
        channel="C_GENERAL", text="card", blocks=kit.card_blocks(), thread_ts=root["ts"]
    )
    await sandbox.post_message("U_APPROVER", "looks fine", thread_ts=root["ts"])
    replies = await client.conversations_replies(channel="C_GENERAL", ts=root["ts"])
    assert [m["text"] for m in replies["messages"]] == ["run started", "card", "looks fine"]
    assert replies["messages"][0]["reply_count"] == 2
    history = await client.conversations_history(channel="C_GENERAL")
    assert [m["ts"] for m in history["messages"]] == [root["ts"]]
    missing = await api_error(client.conversations_replies(channel="C_GENERAL", ts="1.000001"))
    assert missing["error"] == "thread_not_found"
    await client.chat_update(channel="C_GENERAL", ts=reply["ts"], text="approved")
    updated = sandbox.message("C_GENERAL", reply["ts"])
    assert updated["text"] == "approved" and updated["blocks"][0]["type"] == "header"
    await client.chat_update(channel="C_GENERAL", ts=reply["ts"], text="done", blocks=[])
    assert sandbox.message("C_GENERAL", reply["ts"])["blocks"] == []
    person_ts = sandbox.thread("C_GENERAL", root["ts"])[2]["ts"]
    cant = await api_error(client.chat_update(channel="C_GENERAL", ts=person_ts, text="x"))
    assert cant["error"] == "cant_update_message"
    await client.reactions_add(channel="C_GENERAL", timestamp=root["ts"], name="eyes")
    assert sandbox.message("C_GENERAL", root["ts"])["reactions"][0]["name"] == "eyes"
    link = await client.chat_getPermalink(channel="C_GENERAL", message_ts=root["ts"])
    assert link["permalink"].startswith(sandbox.url)
    await client.chat_delete(channel="C_GENERAL", ts=reply["ts"])
    assert sandbox.message("C_GENERAL", reply["ts"]) is None
    info = await client.conversations_info(channel="C_GENERAL")
    assert info["channel"]["name"] == "general"


async def test_ephemeral_is_visible_only_to_its_user(sandbox: SlackSandbox, client, kit) -> None:
    sent = await client.chat_postEphemeral(
        channel="C_GENERAL", user="U_REQUESTER", text="only you", blocks=kit.card_blocks()
    )
    assert sent["message_ts"]
    assert [e["text"] for e in sandbox.ephemerals("U_REQUESTER")] == ["only you"]
    assert sandbox.ephemerals("U_APPROVER") == []
    assert sandbox.messages("C_GENERAL") == []
    async with aiohttp.ClientSession() as http:
        mine = await (await http.get(f"{sandbox.url}/sandbox/state?user=U_REQUESTER")).json()
        theirs = await (await http.get(f"{sandbox.url}/sandbox/state?user=U_APPROVER")).json()
    assert [e["text"] for e in mine["ephemerals"]] == ["only you"]
    assert theirs["ephemerals"] == []


async def test_rate_limit_injection(sandbox: SlackSandbox, client) -> None:
    sandbox.fail_next("chat.postMessage", "ratelimited", retry_after=2)
    with pytest.raises(SlackApiError) as caught:
        await client.chat_postMessage(channel="C_GENERAL", text="hi")
    assert caught.value.response.status_code == 429
    assert caught.value.response.headers["Retry-After"] == "2"
    assert (await client.chat_postMessage(channel="C_GENERAL", text="hi"))["ok"]
