"""The full-arguments modal (`view_args`) is for the request's requester and the people who
may decide it; every refusal is told (in the modal the click opened, or ephemeral) and
audited, clicks on another card's button too."""

from __future__ import annotations

from bot.slack.ids import CallbackId
from tests.e2e.flows import card_request_id, start_deploy
from tests.e2e.harness import Harness
from tests.helpers.waiting import eventually

NOT_YOURS = "may see its full arguments"
LONG = "v2-" + "x" * 4000  # too long for the card: a View full arguments button
FOREIGN = "does not belong to the card"


def arguments_views(h: Harness, user: str) -> list[dict]:
    return [v for v in h.sandbox.open_views(user) if v.get("callback_id") == CallbackId.VIEW_ARGS]


def refusals_told(h: Harness, user: str) -> list[str]:
    """What the person was told no: ephemerals, and the modals a refused click filled in."""
    told = [m.get("text") or "" for m in h.sandbox.ephemerals(user)]
    for view in h.sandbox.open_views(user):
        if view.get("callback_id") == CallbackId.NOTICE and view["title"]["text"] != "One moment":
            told.append(view["blocks"][0]["text"]["text"])
    return told


async def open_args(h: Harness, user: str, card: dict) -> bool:
    """Click View full arguments as `user`; True when the modal shows them, False when told no."""
    views, told = len(arguments_views(h, user)), len(refusals_told(h, user))
    await h.sandbox.click(user, "C_GENERAL", card["ts"], "view_args")
    await eventually(
        lambda: len(arguments_views(h, user)) > views or len(refusals_told(h, user)) > told
    )
    return len(arguments_views(h, user)) > views


def last_told(h: Harness, user: str) -> str:
    return refusals_told(h, user)[-1]


async def deploy_card(h: Harness, n: int) -> dict:
    """The n-th run of the test waits on a deploy card; returns it."""
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": f"{LONG}{n}"})])
    await h.sandbox.slash_command("U_REQUESTER", f"ops deploy v{n} to staging")
    await h.sandbox.wait_for(
        lambda sb: len(sb.messages("C_GENERAL")) == n and len(h.cards()) == 1, timeout=10
    )
    return h.cards()[0]


async def refusals(h: Harness, run_id: str) -> list[tuple[str | None, str, str]]:
    assert h.bot is not None
    trail = await h.bot.store.audit.trail(run_id)
    return [(e.actor, e.action, e.outcome) for e in trail if e.outcome == "denied"]


async def test_requester_and_deciders_read_the_arguments_others_are_refused(
    harness: Harness,
) -> None:
    h = harness
    card = await start_deploy(h, {"environment": "staging", "version": LONG})
    assert await open_args(h, "U_REQUESTER", card)
    assert await open_args(h, "U_APPROVER", card)
    for outsider in ("U_GUEST", "U_EXTERNAL"):
        assert not await open_args(h, outsider, card)
        assert NOT_YOURS in last_told(h, outsider)
    assert h.bot is not None
    request = await h.bot.store.requests.get(card_request_id(card))
    assert request is not None
    assert await refusals(h, request.spec.run_id) == [
        ("U_GUEST", "view_args", "denied"),
        ("U_EXTERNAL", "view_args", "denied"),
    ]


async def test_a_tool_with_approvers_shows_its_arguments_only_to_them(harness: Harness) -> None:
    h = harness
    h.model.reply(tool_calls=[("restart", {"service": LONG})])
    h.model.reply(text="Restarted.")
    await h.sandbox.slash_command("U_REQUESTER", "ops restart api")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    card = h.cards()[0]
    assert await open_args(h, "U_APPROVER2", card)  # in the approvers group
    assert await open_args(h, "U_REQUESTER", card)  # may not decide, but asked for it
    assert not await open_args(h, "U_MEMBER", card)
    assert NOT_YOURS in last_told(h, "U_MEMBER")


async def test_a_button_naming_another_cards_request_is_refused_and_audited(
    harness: Harness,
) -> None:
    h = harness
    first, second = await deploy_card(h, 1), await deploy_card(h, 2)
    first_id = card_request_id(first)
    assert card_request_id(second) != first_id
    for action_id in ("view_args", "approve", "edit"):
        payload = h.sandbox.click_payload("U_APPROVER", "C_GENERAL", second["ts"], action_id)
        payload["actions"][0]["value"] = first_id  # a tampered click
        told = len(refusals_told(h, "U_APPROVER"))
        delivery = await h.sandbox.send_payload("block_actions", payload)
        assert delivery.status == 200
        await eventually(lambda told=told: len(refusals_told(h, "U_APPROVER")) > told)
        assert FOREIGN in last_told(h, "U_APPROVER")
        for view in h.sandbox.open_views("U_APPROVER"):  # the person closes what they read
            await h.sandbox.close_view("U_APPROVER", view["id"])
    assert arguments_views(h, "U_APPROVER") == []
    assert h.bot is not None
    request = await h.bot.store.requests.get(first_id)
    assert request is not None and request.state.status == "pending"
    assert await refusals(h, request.spec.run_id) == [
        ("U_APPROVER", "view_args", "denied"),
        ("U_APPROVER", "approve", "denied"),
        ("U_APPROVER", "edit", "denied"),
    ]
