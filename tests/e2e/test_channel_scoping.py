"""A request open to anyone is seen and decided only by the members of its channel: a
private channel's requests stay out of other people's App Home, and a forged click is refused
(issue 11, finding 5)."""

from __future__ import annotations

import json

from tests.e2e.flows import DEPLOY
from tests.e2e.harness import Harness, has_button

PRIVATE = "C_PRIVATE"


def _home_approves(h: Harness, user: str) -> int:
    view = h.sandbox.home(user) or {}
    return sum(
        1
        for b in view.get("blocks", [])
        if b.get("type") == "actions"
        for el in b.get("elements", [])
        if el.get("action_id") == "approve"
    )


async def _private_deploy(h: Harness) -> dict:
    h.sandbox.ws.set_members(PRIVATE, ["U_REQUESTER", "U_APPROVER"], private=True)
    h.model.reply(tool_calls=[("deploy", DEPLOY)])
    h.model.reply(text="Deployed v2 to staging.")
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging", channel=PRIVATE)
    await h.sandbox.wait_for(lambda sb: len(h.cards(PRIVATE)) == 1, timeout=10)
    return h.cards(PRIVATE)[0]


async def test_a_private_channel_request_stays_out_of_a_non_members_home(
    harness: Harness,
) -> None:
    h = harness
    await _private_deploy(h)
    for user in ("U_APPROVER", "U_MEMBER"):
        await h.sandbox.open_home(user)
    await h.sandbox.wait_for(lambda sb: sb.home("U_APPROVER") and sb.home("U_MEMBER"))
    await h.idle()
    assert _home_approves(h, "U_APPROVER") == 1
    assert _home_approves(h, "U_MEMBER") == 0
    assert "`deploy`" not in json.dumps(h.sandbox.home("U_MEMBER"))
    assert "`deploy`" in json.dumps(h.sandbox.home("U_APPROVER"))


async def test_a_non_members_forged_approve_is_refused(harness: Harness) -> None:
    h = harness
    card = await _private_deploy(h)
    await h.sandbox.open_home("U_MEMBER")
    await h.sandbox.wait_for(lambda sb: sb.home("U_MEMBER"))
    # U_MEMBER never saw the card: they send the click Slack would send for it
    payload = h.sandbox.click_payload("U_MEMBER", PRIVATE, card["ts"], "approve")
    d = await h.sandbox.send_payload("block_actions", payload)
    assert d.status == 200
    await h.sandbox.wait_for(
        lambda sb: sb.ephemerals("U_MEMBER") or sb.messages("D_MEMBER"), timeout=10
    )
    said = json.dumps([*h.sandbox.ephemerals("U_MEMBER"), *h.sandbox.messages("D_MEMBER")])
    assert "members of the channel" in said
    await h.idle()
    assert h.effects.deploys == []
    assert has_button(h.sandbox.message(PRIVATE, card["ts"]), "approve")
    trail = await h.bot.store.audit.trail((await h.bot.store.runs.list())[0].id)
    assert any(e.outcome == "denied" and e.actor == "U_MEMBER" for e in trail)
    # a member of the channel may
    await h.sandbox.click("U_APPROVER", PRIVATE, card["ts"], "approve")
    await h.sandbox.wait_for(lambda sb: "Deployed v2" in h.thread_text(PRIVATE), timeout=10)
    assert len(h.effects.deploys) == 1
