"""The Python client (bot.client) against the real bot: request_approval, ask, the typed
errors, and @requires_approval running the function with the edited arguments."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.client import (
    ApprovalExpired,
    ApprovalRejected,
    AsyncSaysoClient,
    SaysoAPIError,
    SaysoClient,
)
from tests.e2e.api_flows import make_key
from tests.e2e.harness import Harness, has_button, message_text
from tests.helpers.views import filled_views
from tests.helpers.waiting import eventually


def open_cards(h: Harness) -> list[dict[str, Any]]:
    return [m for m in h.sandbox.messages("C_GENERAL") if has_button(m, "reject")]


async def next_card(h: Harness, used: set[str]) -> dict[str, Any]:
    """The first card not in `used` still waiting for a decision (it is added to `used`: a
    decided card may keep its buttons a moment, as callers are told before cards change)."""

    def fresh() -> list[dict[str, Any]] | None:
        return [c for c in open_cards(h) if c["ts"] not in used] or None

    card = (await h.sandbox.wait_for(lambda sb: fresh(), timeout=10))[0]
    used.add(card["ts"])
    return card


async def test_request_approval_and_its_typed_errors(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    used: set[str] = set()
    asking = asyncio.create_task(
        client.request_approval(tool="deploy", arguments={"env": "prod"}, channel="C_GENERAL")
    )
    card = await next_card(h, used)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    decision = await asking
    assert decision.type == "approve" and decision.arguments == {"env": "prod"}

    rejecting = asyncio.create_task(
        client.request_approval(tool="deploy", arguments={}, channel="C_GENERAL")
    )
    card = await next_card(h, used)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "not today"})
    with pytest.raises(ApprovalRejected) as rejected:
        await rejecting
    assert (rejected.value.reason, rejected.value.decided_by) == ("not today", "U_APPROVER")

    with pytest.raises(ApprovalExpired) as expired:  # nobody decides: the wait runs out
        await client.request_approval(tool="deploy", arguments={}, channel="C_GENERAL", timeout=0.5)
    assert expired.value.state.status == "cancelled"
    await h.idle()  # the card's update goes out through the outbox
    stopped = [m for m in h.sandbox.messages("C_GENERAL") if "stopped waiting" in message_text(m)]
    assert len(stopped) == 1 and not has_button(stopped[0], "approve")

    with pytest.raises(SaysoAPIError) as refused:
        await AsyncSaysoClient(h.url, "sk_sayso_wrong").get("x")
    assert refused.value.code == "unauthorized" and refused.value.status == 401


async def test_ask_gets_the_answer_typed_in_the_modal(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    asking = asyncio.create_task(
        AsyncSaysoClient(h.url, token).ask("Which region?", channel="C_GENERAL")
    )
    card = await h.sandbox.wait_for(
        lambda sb: [m for m in sb.messages("C_GENERAL") if has_button(m, "answer")] or None
    )
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card[0]["ts"], "answer")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"answer": "eu-west-1"})
    assert await asking == "eu-west-1"


async def test_the_decorator_runs_the_function_with_edited_arguments(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h)
    client = SaysoClient(h.url, token)
    ran: list[tuple[str, int]] = []
    used: set[str] = set()

    @client.requires_approval(channel="C_GENERAL")
    def scale(service: str, replicas: int = 1) -> str:
        """Scale a service."""
        ran.append((service, replicas))
        return f"{service} x{replicas}"

    result = asyncio.create_task(asyncio.to_thread(scale, "api", replicas=2))
    card = await next_card(h, used)
    assert has_button(card, "edit")  # the signature's schema enables Edit
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"replicas": "5"})
    assert await result == "api x5"
    assert ran == [("api", 5)]

    aclient = AsyncSaysoClient(h.url, token)

    @aclient.requires_approval(channel="C_GENERAL")
    async def restart(service: str) -> str:
        ran.append((service, 0))
        return "restarted"

    refused = asyncio.create_task(restart("db"))
    card = await next_card(h, used)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
    view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "no"})
    with pytest.raises(ApprovalRejected):
        await refused
    assert ran == [("api", 5)]  # a rejected call never runs


async def test_a_question_is_answered_by_a_reply_in_the_cards_thread(harness: Harness) -> None:
    h = harness
    assert h.bot is not None
    store = h.bot.store
    token, _ = await make_key(h)
    client = AsyncSaysoClient(h.url, token)
    created = await client.create(kind="question", title="Which region?", channel="C_GENERAL")
    for _ in range(100):  # the 201 comes once durable; the card's ts once Slack has it
        if created.message_ts is not None:
            break
        await asyncio.sleep(0.05)
        created = await client.get(created.id)
    assert created.message_ts is not None
    asking = asyncio.create_task(client.wait(created.id, 10))
    await h.sandbox.post_message("U_APPROVER", "us-east-2", thread_ts=created.message_ts)
    state = await asking
    assert state.status == "answered" and state.decision is not None
    assert state.decision.answer == "us-east-2" and state.decision.decided_by == "U_APPROVER"

    # the caller hears first; the request's run is ended right after
    async def ended() -> bool:
        run = await store.runs.for_thread("C_GENERAL", created.message_ts)
        return run is not None and run.status == "completed"

    await eventually(ended, timeout=5, what="the question's run to end")
