"""Edit, reject, answer, several calls, permissions, second clicks, unknown requests, bad
signatures, expiry, replays."""

from __future__ import annotations

import json

from bot.slack.render import slack_text
from tests.e2e.flows import (
    actor,
    card_request_id,
    open_modal,
    start_deploy,
    tool_results,
    wait_answer,
)
from tests.e2e.harness import SECRET, Harness, has_button, message_text


async def test_edit_with_valid_arguments_runs_the_edited_call(harness: Harness) -> None:
    h = harness
    card = await start_deploy(h)
    view = await open_modal(h, "U_APPROVER", card, "edit")
    assert view["callback_id"] == "sayso_edit"
    blocks = {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}
    assert {"environment", "version"} <= set(blocks)
    assert all(b["element"]["action_id"] == "value" for b in blocks.values())
    d = await h.sandbox.submit_view("U_APPROVER", view["id"], {"version": "v3"})
    assert d.status == 200
    await wait_answer(h, "Deployed v2 to staging.")
    assert [(x["environment"], x["version"]) for x in h.effects.deploys] == [("staging", "v3")]
    result = json.loads(tool_results(h)[0]["content"])
    assert result["arguments_used"]["version"] == "v3"
    card_text = message_text(h.sandbox.message("C_GENERAL", card["ts"]))
    assert "v2" in card_text and "v3" in card_text and "<@U_APPROVER>" in card_text


async def test_edit_with_invalid_arguments_shows_field_errors_and_changes_nothing(
    harness: Harness,
) -> None:
    h = harness
    card = await start_deploy(h)
    view = await open_modal(h, "U_APPROVER", card, "edit")
    d = await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "many"})
    assert d.status == 200
    assert "replicas" in h.sandbox.view_errors(view["id"])
    assert h.sandbox.view_is_open(view["id"])
    assert h.effects.deploys == []
    assert has_button(h.sandbox.message("C_GENERAL", card["ts"]), "approve")
    requests = await h.bot.store.requests.for_run((await h.bot.store.runs.list())[0].id)
    assert [r.state.status for r in requests] == ["pending"]


async def test_reject_with_reason_tells_the_model(harness: Harness) -> None:
    h = harness
    card = await start_deploy(h)
    view = await open_modal(h, "U_APPROVER", card, "reject")
    assert view["callback_id"] == "sayso_reject"
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "Freeze until Monday"})
    await wait_answer(h, "Deployed v2 to staging.")  # the fake model's next reply
    assert h.effects.deploys == []
    assert json.loads(tool_results(h)[0]["content"]) == {"error": "Freeze until Monday"}
    assert "Freeze until Monday" in message_text(h.sandbox.message("C_GENERAL", card["ts"]))


async def test_reject_without_reason_uses_the_default(harness: Harness) -> None:
    h = harness
    card = await start_deploy(h)
    view = await open_modal(h, "U_APPROVER", card, "reject")
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": ""})
    await wait_answer(h, "Deployed v2 to staging.")
    assert json.loads(tool_results(h)[0]["content"]) == {"error": "Tool call rejected"}


async def test_answer_hitl_and_manual_calls(harness: Harness) -> None:
    h = harness
    h.model.reply(
        tool_calls=[
            ("ask_user", {"question": "Which region?"}),
            ("ticket_lookup", {"ticket_id": "42"}),
        ]
    )
    h.model.reply(text="All answered.")
    await h.sandbox.slash_command("U_REQUESTER", "ops check ticket 42")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 2)
    ask, ticket = h.cards()
    assert has_button(ask, "answer") and has_button(ticket, "answer")
    view = await open_modal(h, "U_APPROVER", ask, "answer")
    assert view["callback_id"] == "sayso_answer"
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"answer": "eu-west-1"})
    view = await open_modal(h, "U_MEMBER", ticket, "answer")
    bad = await h.sandbox.submit_view("U_MEMBER", view["id"], {"answer": "{not json"})
    assert bad.status == 200 and "answer" in h.sandbox.view_errors(view["id"])
    await h.sandbox.submit_view("U_MEMBER", view["id"], {"answer": '{"status": "open"}'})
    await wait_answer(h, "All answered.")
    results = {m["tool_call_id"]: m["content"] for m in tool_results(h)}
    assert "eu-west-1" in results.values()
    assert json.loads(next(v for v in results.values() if v != "eu-west-1")) == {"status": "open"}


async def test_two_calls_in_one_turn_continue_when_both_are_decided(harness: Harness) -> None:
    h = harness
    h.model.reply(
        tool_calls=[
            ("deploy", {"environment": "staging", "version": "v2"}),
            ("deploy", {"environment": "production", "version": "v2"}),
        ]
    )
    h.model.reply(text="Staging done, production refused.")
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy v2 everywhere")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 2)
    staging, production = h.cards()
    await h.sandbox.click("U_APPROVER", "C_GENERAL", staging["ts"], "approve")
    await h.idle()
    assert len(h.model.requests) == 1  # still waiting for the second decision
    view = await open_modal(h, "U_APPROVER", production, "reject")
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "not today"})
    await wait_answer(h, "Staging done, production refused.")
    assert [d["environment"] for d in h.effects.deploys] == ["staging"]


async def test_unauthorized_click_gets_an_ephemeral_and_changes_nothing(harness: Harness) -> None:
    h = harness
    h.model.reply(tool_calls=[("restart", {"service": "api"})])
    h.model.reply(text="Restarted.")
    await h.sandbox.slash_command("U_REQUESTER", "ops restart api")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    card = h.cards()[0]
    for user in ("U_MEMBER", "U_GUEST", "U_EXTERNAL", "U_REQUESTER"):
        await h.sandbox.click(user, "C_GENERAL", card["ts"], "approve")
        await h.sandbox.wait_for(lambda sb, u=user: sb.ephemerals(u))
    assert "S_APPROVERS" in json.dumps(h.sandbox.ephemerals("U_MEMBER"))
    assert h.effects.restarts == []
    assert has_button(h.sandbox.message("C_GENERAL", card["ts"]), "approve")
    run = (await h.bot.store.runs.list())[0]
    trail = await h.bot.store.audit.trail(run.id)
    assert sum(1 for e in trail if e.outcome == "denied") == 4
    await h.sandbox.click("U_APPROVER2", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Restarted.")
    assert h.effects.restarts == ["api"]


async def test_second_click_on_a_decided_card_says_who_decided(harness: Harness) -> None:
    import asyncio

    h = harness
    card = await start_deploy(h)
    # two approvers click the same card at once (both clients still show the buttons)
    await asyncio.gather(
        h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve"),
        h.sandbox.click("U_APPROVER2", "C_GENERAL", card["ts"], "approve"),
    )
    await wait_answer(h, "Deployed v2 to staging.")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_APPROVER") or sb.ephemerals("U_APPROVER2"))
    loser_notes = json.dumps(
        h.sandbox.ephemerals("U_APPROVER") + h.sandbox.ephemerals("U_APPROVER2")
    )
    assert "already approved by" in loser_notes
    assert len(h.effects.deploys) == 1
    # a late click through the service (a stale client) is refused the same way
    outcome = await h.bot.service.decide(card_request_id(card), actor("U_MEMBER"), "approve")
    shown = slack_text(outcome.message)  # the service names people; Slack renders mentions
    assert outcome.kind == "lost" and "already approved by <@U_APPROVER" in shown
    assert len(h.effects.deploys) == 1


async def test_unknown_request_reference_is_refused_politely(harness: Harness) -> None:
    h = harness
    outcome = await h.bot.service.decide("does-not-exist", actor("U_APPROVER"), "approve")
    assert outcome.kind == "not_found"


async def test_bad_signature_is_refused_and_changes_nothing(harness: Harness) -> None:
    import time

    import aiohttp

    h = harness
    body = (
        "command=%2Fsayso&text=ops+deploy&user_id=U_REQUESTER"
        "&channel_id=C_GENERAL&team_id=T_SANDBOX"
    )
    ts = str(int(time.time()))
    async with aiohttp.ClientSession() as s:
        for sig in ("v0=deadbeef", None):
            headers = {
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Slack-Request-Timestamp": ts,
            }
            if sig:
                headers["X-Slack-Signature"] = sig
            async with s.post(f"{h.url}/slack/events", data=body, headers=headers) as r:
                assert r.status == 401
    assert await h.bot.store.runs.list() == []
    assert h.sandbox.messages("C_GENERAL") == []


async def test_restart_between_pause_and_click(harness: Harness) -> None:
    h = harness
    card = await start_deploy(h)
    await h.stop_bot()
    await h.start_bot()
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Deployed v2 to staging.")
    assert len(h.effects.deploys) == 1


async def test_expired_request_cannot_be_approved(harness: Harness) -> None:
    from datetime import UTC, datetime, timedelta

    h = harness
    card = await start_deploy(h)
    later = datetime.now(UTC) + timedelta(days=2)
    outcome = await h.bot.store.requests.decide(
        card_request_id(card), actor="U_APPROVER", status="approved", now=later
    )
    assert outcome.expired and not outcome.won
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_APPROVER"))
    assert "expired" in json.dumps(h.sandbox.ephemerals("U_APPROVER")).lower()
    assert h.effects.deploys == []


async def test_sweeper_expires_due_requests_and_the_run_continues(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_approval_ttl": "1s"}
    await h.start_bot()
    card = await start_deploy(h)
    await h.sandbox.wait_for(lambda sb: "Deployed v2 to staging." in h.thread_text(), timeout=15)
    assert h.effects.deploys == []
    result = json.loads(tool_results(h)[0]["content"])
    assert "expired" in result["error"]
    updated = h.sandbox.message("C_GENERAL", card["ts"])
    assert not has_button(updated, "approve")
    assert "expired" in message_text(updated).lower()


async def test_a_replayed_slash_command_starts_one_run_even_on_another_replica(
    harness: Harness,
) -> None:
    import time
    from urllib.parse import urlencode

    import aiohttp

    from bot.sandbox import sign

    h = harness
    h.model.reply(text="Staging is healthy.")
    body = urlencode(
        {
            "command": "/sayso",
            "text": "ops how is staging",
            "user_id": "U_REQUESTER",
            "channel_id": "C_GENERAL",
            "team_id": "T_SANDBOX",
            "trigger_id": "1.2.3",
            "response_url": f"{h.sandbox.url}/response/none",
        }
    )
    ts = str(int(time.time()))
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sign(SECRET, ts, body),
    }
    async with aiohttp.ClientSession() as s:
        async with s.post(f"{h.url}/slack/events", data=body, headers=headers) as r:
            assert r.status == 200
        await wait_answer(h, "Staging is healthy.")
        async with s.post(f"{h.url}/slack/events", data=body, headers=headers) as r:
            assert r.status == 409  # same replica: refused before anything else
        await h.stop_bot()
        await h.start_bot()  # another replica: no memory of it, the store remembers
        async with s.post(f"{h.url}/slack/events", data=body, headers=headers) as r:
            assert r.status == 200
    await h.idle()
    assert len(await h.bot.store.runs.list()) == 1
    assert len(h.sandbox.messages("C_GENERAL")) == 1


def test_replay_guard_forgets_after_the_window() -> None:
    from bot.slack.middleware import ReplayGuard

    guard = ReplayGuard(window=300, limit=3)
    assert guard.first("a") and not guard.first("a")
    assert guard.first("b") and guard.first("c") and guard.first("d")  # full: oldest dropped
    assert len(guard._seen) <= 3
    guard = ReplayGuard(window=0)
    assert guard.first("a") and guard.first("a")
