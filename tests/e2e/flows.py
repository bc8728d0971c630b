"""Steps the end-to-end tests share: start a deploy or a review, wait for the answer, read
what the model was sent, open a card's modal."""

from __future__ import annotations

from typing import Any

from bot.service import Actor
from tests.e2e.harness import Harness, has_button, message_text
from tests.helpers.views import filled_views

DEPLOY = {"environment": "staging", "version": "v2"}
DRAFT = "DRAFT: Hello, we refunded your order."


async def start_deploy(h: Harness, args: dict | None = None) -> dict:
    """`/sayso ops deploy v2 to staging`: the model asks for `deploy`; returns its card."""
    h.model.reply(tool_calls=[("deploy", args or DEPLOY)])
    h.model.reply(text="Deployed v2 to staging.")
    d = await h.sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    assert d.status == 200
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    return h.cards()[0]


async def start_review(h: Harness) -> dict:
    """A run whose draft answer waits for a human review; returns the review card."""
    h.model.reply(text=DRAFT)
    h.model.reply(text="Reply sent.")
    await h.sandbox.slash_command("U_REQUESTER", "ops draft the refund reply")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    card = h.cards()[0]
    assert has_button(card, "review")
    assert "refunded your order" in message_text(card)
    return card


async def wait_answer(h: Harness, text: str, channel: str = "C_GENERAL") -> None:
    """Until `text` shows in the run's thread (the latest run of `channel`)."""
    await h.sandbox.wait_for(lambda sb: text in h.thread_text(channel), timeout=10)


async def open_modal(h: Harness, user: str, card: dict, action_id: str) -> dict:
    """Click `action_id` on the card as `user`; returns the modal that opened."""
    d = await h.sandbox.click(user, "C_GENERAL", card["ts"], action_id)
    assert d.status == 200
    views = await h.sandbox.wait_for(lambda sb: filled_views(sb, user))
    return views[-1]


def card_request_id(card: dict) -> str:
    """The approval request a card's Approve button names."""
    for block in card["blocks"]:
        for el in block.get("elements", []) or []:
            if el.get("action_id") == "approve":
                return str(el["value"])
    raise AssertionError("no approve button")


def actor(user: str) -> Actor:
    """A person of the sandbox workspace, as the service sees them."""
    return Actor(user_id=user, team_id="T_SANDBOX")


def tool_results(h: Harness) -> list[dict[str, Any]]:
    """The tool messages the model received in its last request."""
    return [m for m in h.model.last_request["messages"] if m["role"] == "tool"]


def user_messages(h: Harness) -> list[str]:
    """The user messages the model received in its last request."""
    return [m["content"] for m in h.model.last_request["messages"] if m["role"] == "user"]
