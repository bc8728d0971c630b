"""When Slack's auth.test fails at start, sayso does not know its workspace: it starts anyway,
answers 503 on /healthz, tells everyone "sayso is starting" and changes nothing until auth.test
succeeds (retried with backoff). A run's team id never stands in for the workspace's, so a
person of another workspace cannot make themselves an insider by posting in a thread."""

from __future__ import annotations

from typing import Any

import aiohttp

from bot.service.permissions import STARTING
from tests.e2e.flows import start_deploy, wait_answer
from tests.e2e.harness import Harness, has_button
from tests.helpers.waiting import eventually

PRODUCTION = {"environment": "production", "version": "v9"}


async def health(h: Harness) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as s, s.get(f"{h.url}/healthz") as r:
        return r.status, await r.json()


def told(h: Harness, user: str, text: str) -> bool:
    return any(text in (e.get("text") or "") for e in h.sandbox.ephemerals(user))


async def test_nothing_changes_until_auth_test_succeeds_and_outsiders_never_decide(
    harness: Harness,
) -> None:
    h = harness
    card = await start_deploy(h)
    root_ts = h.root()["ts"]
    requests_before = len(h.model.requests)

    # the bot restarts while Slack's auth.test fails: it starts anyway and keeps retrying
    await h.stop_bot()
    h.sandbox.fail_next("auth.test", "internal_error", times=1_000_000)
    bot = await h.start_bot()
    bot.identity.max_delay = 0.1  # retry quickly here
    status, body = await health(h)
    assert status == 503
    assert body["ok"] is False and "auth.test" in body["slack"]

    # a click, a command, a mention, a follow-up: each is told, none changes anything
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    command = await h.sandbox.slash_command("U_REQUESTER", "ops deploy v3 to staging")
    assert command.status == 200
    await h.sandbox.post_message("U_REQUESTER", "<@U_SAYSO> ops deploy v4", channel="C_OPS")
    await h.sandbox.post_message("U_EXTERNAL", "deploy v9 to production", thread_ts=root_ts)
    for user in ("U_APPROVER", "U_REQUESTER", "U_EXTERNAL"):
        await eventually(lambda user=user: told(h, user, STARTING), timeout=5)
    await h.idle()
    assert h.effects.deploys == []
    assert len(h.model.requests) == requests_before
    assert has_button(h.sandbox.message("C_GENERAL", card["ts"]) or {}, "approve")
    assert len(h.sandbox.messages("C_GENERAL")) == 1

    # auth.test works again: the retry learns the workspace
    h.sandbox.clear_failures("auth.test")
    await eventually(lambda: bot.identity.known, timeout=10)
    status, body = await health(h)
    assert status == 200 and body["slack"] == "connected"

    # the normal flow: an outsider is refused, an approver decides, the tool runs once
    await h.sandbox.click("U_EXTERNAL", "C_GENERAL", card["ts"], "approve")
    await eventually(lambda: told(h, "U_EXTERNAL", "other workspaces"), timeout=5)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Deployed v2 to staging.")
    assert len(h.effects.deploys) == 1

    # the outsider follows up in the thread (their team id on the new run) and approves
    h.model.reply(tool_calls=[("deploy", PRODUCTION)])
    h.model.reply(text="Deployed v9 to production.")
    seen = len(h.sandbox.ephemerals("U_EXTERNAL"))
    await h.sandbox.post_message("U_EXTERNAL", "deploy v9 to production", thread_ts=root_ts)
    await eventually(lambda: pending(h) or len(h.sandbox.ephemerals("U_EXTERNAL")) > seen)
    for card in pending(h):
        seen = len(h.sandbox.ephemerals("U_EXTERNAL"))
        await h.sandbox.click("U_EXTERNAL", "C_GENERAL", card["ts"], "approve")
        await eventually(
            lambda seen=seen: production(h) or len(h.sandbox.ephemerals("U_EXTERNAL")) > seen,
            timeout=10,
        )
        assert told(h, "U_EXTERNAL", "other workspaces")
    await h.idle()
    assert production(h) == []


def pending(h: Harness) -> list[dict[str, Any]]:
    return [c for c in h.cards() if has_button(c, "approve")]


def production(h: Harness) -> list[dict[str, Any]]:
    return [d for d in h.effects.deploys if d["environment"] == "production"]
