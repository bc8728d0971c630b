"""The approval API over HTTP: a request is created, its card decided in Slack, and the
caller learns the decision by long-poll; edits against a schema; reject, expire, cancel;
idempotency; the runner never drives an API request's run."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

from bot.agent.util import utcnow
from bot.service.api_requests import SAFETY_RECHECK
from tests.e2e.api_flows import card_of, create, http, make_key
from tests.e2e.harness import Harness, has_button, message_text
from tests.helpers.views import filled_views
from tests.helpers.waiting import eventually

SCHEMA = {
    "type": "object",
    "properties": {"env": {"type": "string"}, "replicas": {"type": "integer", "minimum": 1}},
    "required": ["env"],
}


async def test_approve_in_slack_wakes_the_long_poll(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    r = await create(h, token, tool="deploy", arguments={"env": "prod"}, context={"pr": "#42"})
    assert r.status_code == 201, r.text
    created = r.json()
    assert created["status"] == "pending" and created["channel"] == "C_GENERAL"
    card = card_of(h, created["message_ts"])
    text = message_text(card)
    assert "Deploy v2 to production" in text and "pr: #42" in text and "prod" in text
    assert has_button(card, "approve") and not has_button(card, "edit")  # no schema, no Edit
    async with http(h, token) as client:
        poll = asyncio.create_task(client.get(f"/v1/requests/{created['id']}?wait=20"))
        await asyncio.sleep(0.3)
        assert not poll.done()
        clicked = time.monotonic()
        await h.sandbox.click("U_APPROVER", "C_GENERAL", created["message_ts"], "approve")
        answer = await poll
        assert time.monotonic() - clicked < 2
    state = answer.json()
    assert state["status"] == "approved" and state["kind"] == "approval"
    decision = state["decision"]
    assert decision["type"] == "approve" and decision["decided_by"] == "U_APPROVER"
    assert decision["arguments"] == {"env": "prod"}
    assert [a["user"] for a in decision["approvals"]] == ["U_APPROVER"]
    await h.sandbox.wait_for(lambda sb: not has_button(card_of(h, created["message_ts"])))
    # the run of an API request is the caller's: no runner ever claims it
    assert h.bot is not None
    await asyncio.sleep(0.5)  # a few sweeps
    runs = await h.bot.store.runs.list()
    assert [(r.agent_id, r.status, r.lease_owner) for r in runs] == [("api:ci", "completed", None)]
    assert await h.bot.store.runs.ready() == []
    assert await h.bot.service.continue_run(runs[0].id)  # told to, it claims and lets go
    await h.idle()
    after = await h.bot.store.runs.get(runs[0].id)
    assert after is not None and (after.status, after.lease_owner) == ("completed", None)
    assert after.state is None  # never driven: no saved state
    # its end is its card: a later sweep shows nothing more (no answer, no failure)
    later = utcnow() + timedelta(minutes=5)
    assert await h.bot.store.runs.unshown(later, later - timedelta(days=1)) == []
    shown = len(h.sandbox.messages("C_GENERAL")) + len(h.thread())
    await h.bot.service.sweep_once(later)
    await h.idle()
    assert len(h.sandbox.messages("C_GENERAL")) + len(h.thread()) == shown


async def test_edit_against_the_schema(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    r = await create(h, token, tool="deploy", arguments={"env": "prod"}, schema=SCHEMA)
    created = r.json()
    card = card_of(h, created["message_ts"])
    assert has_button(card, "edit")
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    assert view["callback_id"] == "sayso_edit"
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "0"})
    assert "replicas" in h.sandbox.view_errors(view["id"])
    assert h.sandbox.view_is_open(view["id"])
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"env": "staging", "replicas": "3"})
    async with http(h, token) as client:
        state = (await client.get(f"/v1/requests/{created['id']}?wait=10")).json()
    assert state["status"] == "approved"
    assert state["decision"]["type"] == "edit"
    assert state["decision"]["arguments"] == {"env": "staging", "replicas": 3}


async def test_reject_with_a_reason(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    created = (await create(h, token, tool="deploy", arguments={"env": "prod"})).json()
    await h.sandbox.click("U_APPROVER", "C_GENERAL", created["message_ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "Freeze until Monday"})
    async with http(h, token) as client:
        state = (await client.get(f"/v1/requests/{created['id']}?wait=10")).json()
    assert state["status"] == "rejected"
    assert state["decision"]["reason"] == "Freeze until Monday"
    assert state["decision"]["arguments"] is None


async def test_expiry_and_cancel(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    expiring = (await create(h, token, tool="deploy", expires_in=0.5)).json()
    async with http(h, token) as client:
        polled = time.monotonic()
        state = (await client.get(f"/v1/requests/{expiring['id']}?wait=10")).json()
        assert state["status"] == "expired" and state["decision"] is None
        # woken by the expiry (split: in the worker), not by the long-poll's safety re-check
        assert time.monotonic() - polled < SAFETY_RECHECK
        await h.sandbox.wait_for(
            lambda sb: "expired" in message_text(card_of(h, expiring["message_ts"])).lower()
        )
        pending = (await create(h, token, tool="deploy")).json()
        cancelled = await client.post(f"/v1/requests/{pending['id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
        again = await client.post(f"/v1/requests/{pending['id']}/cancel")
        assert again.json()["status"] == "cancelled"
    await h.idle()  # the card's update goes through the outbox
    card = card_of(h, pending["message_ts"])
    assert not has_button(card, "approve") and "cancel" in message_text(card).lower()


async def test_idempotency_key_returns_the_same_request(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    first = await create(h, token, tool="deploy", idempotency_key="deploy-42")
    second = await create(h, token, tool="deploy", idempotency_key="deploy-42")
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert len([m for m in h.sandbox.messages("C_GENERAL") if has_button(m)]) == 1


async def test_a_quorum_needs_two_people_and_lists_both(harness: Harness) -> None:
    """`min_approvals` works for API requests as for sayso's own tools: the first approval
    leaves the request pending (its card counts), the second decides it."""
    h = harness
    token, _ = await make_key(h)
    r = await create(
        h,
        token,
        tool="deploy",
        arguments={"env": "prod"},
        approvers=["U_APPROVER", "U_APPROVER2"],
        min_approvals=2,
    )
    assert r.status_code == 201, r.text
    created = r.json()
    await h.sandbox.click("U_APPROVER", "C_GENERAL", created["message_ts"], "approve")
    await h.sandbox.wait_for(
        lambda sb: "1 of 2 approvals" in message_text(card_of(h, created["message_ts"]))
    )
    async with http(h, token) as client:
        state = (await client.get(f"/v1/requests/{created['id']}")).json()
        assert state["status"] == "pending" and state["decision"] is None
        await h.sandbox.click("U_APPROVER2", "C_GENERAL", created["message_ts"], "approve")
        state = (await client.get(f"/v1/requests/{created['id']}?wait=10")).json()
    assert state["status"] == "approved"
    assert [a["user"] for a in state["decision"]["approvals"]] == ["U_APPROVER", "U_APPROVER2"]


async def test_api_requests_do_not_use_up_the_requesters_rate_limit(harness: Harness) -> None:
    """`requested_by` names who asked; the approval requests a pipeline makes for them are
    not runs they started, so their own `/sayso` is not refused by SAYSO_RATE_LIMIT."""
    h = harness
    token, _ = await make_key(h)
    for n in range(11):  # more than the default 10/minute
        r = await create(h, token, tool="deploy", requested_by="U_REQUESTER", title=f"Step {n}")
        assert r.status_code == 201, r.text
    h.model.reply(text="All good.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is the api")
    assert h.bot is not None
    store = h.bot.store

    async def answered() -> bool:
        runs = await store.runs.list(limit=50)
        return any(r.agent_id == "ops" and r.status == "completed" for r in runs)

    await eventually(answered, timeout=10, what="the requester's own run to start and answer")
    assert not [
        e for e in h.sandbox.ephemerals("U_REQUESTER") if "try again" in (e.get("text") or "")
    ]
