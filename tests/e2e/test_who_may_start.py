"""Finding 4 of issue 11: who may start runs and follow-ups, and in which channels."""

from __future__ import annotations

import json

from bot.agent import Agent
from bot.agent.models import ModelSettings, OpenAIChatModel
from tests.e2e.audit import audit_events_of
from tests.e2e.flows import wait_answer
from tests.e2e.harness import Harness


def ephemeral_text(h: Harness, user: str) -> str:
    return json.dumps(h.sandbox.ephemerals(user))


async def with_agent(h: Harness, **options: object) -> None:
    """Restart the bot with one agent `ops` built with `options`."""
    model = OpenAIChatModel("fake", base_url=h.model.base_url, api_key="test-key")
    quick = ModelSettings(timeout=5, max_retries=1, backoff_base=0.01, backoff_max=0.05)
    await h.stop_bot()
    await h.start_bot([Agent(id="ops", model=model, model_settings=quick, **options)])  # type: ignore[arg-type]


async def test_a_guest_or_an_outsider_may_not_start_a_run(harness: Harness) -> None:
    h = harness
    for user in ("U_GUEST", "U_EXTERNAL"):
        await h.sandbox.slash_command(user, "ops deploy v2 to production")
        await h.sandbox.wait_for(lambda sb, user=user: "may start" in ephemeral_text(h, user))
        assert "full member" in ephemeral_text(h, user)
        events = await audit_events_of(h.bot.store, user)
        assert [(a, o) for a, o, _ in events] == [("start", "denied")]
    await h.sandbox.post_message("U_GUEST", "<@U_SAYSO> ops deploy v2 to production")
    await h.sandbox.wait_for(lambda sb: ephemeral_text(h, "U_GUEST").count("may start") == 2)
    await h.idle()
    assert await h.bot.store.runs.list() == [] and h.model.requests == []


async def test_a_guest_may_not_follow_up_in_a_members_thread(harness: Harness) -> None:
    h = harness
    h.model.reply(text="Staging is healthy.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await wait_answer(h, "Staging is healthy.")
    await h.sandbox.post_message("U_GUEST", "now deploy to production", thread_ts=h.root()["ts"])
    await h.sandbox.wait_for(lambda sb: "may start" in ephemeral_text(h, "U_GUEST"))
    await h.idle()
    assert len(h.model.requests) == 1 and len(await h.bot.store.runs.list()) == 1


async def test_listed_people_and_groups_may_start_and_nobody_else(harness: Harness) -> None:
    h = harness
    await with_agent(h, allowed_users=["U_GUEST", "S_APPROVERS"])
    h.model.reply(text="For the guest.")
    await h.sandbox.slash_command("U_GUEST", "ops how is staging")
    await wait_answer(h, "For the guest.")
    h.model.reply(text="For the approver.")
    await h.sandbox.slash_command("U_APPROVER", "ops how is production")
    await h.sandbox.wait_for(lambda sb: len(h.model.requests) == 2)
    await h.sandbox.slash_command("U_MEMBER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: "may start" in ephemeral_text(h, "U_MEMBER"))
    said = ephemeral_text(h, "U_MEMBER")
    assert "<@U_GUEST>" in said and "<!subteam^S_APPROVERS>" in said
    await h.idle()
    assert len(h.model.requests) == 2 and len(await h.bot.store.runs.list()) == 2


async def test_an_agent_limited_to_channels_refuses_others(harness: Harness) -> None:
    h = harness
    await with_agent(h, channels=["C_OPS"])
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: "<#C_OPS>" in ephemeral_text(h, "U_REQUESTER"))
    events = await audit_events_of(h.bot.store, "U_REQUESTER")
    assert [(a, o) for a, o, _ in events] == [("start", "denied")]
    h.model.reply(text="Staging is healthy.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging", channel="C_OPS")
    await wait_answer(h, "Staging is healthy.", channel="C_OPS")
    assert len(h.model.requests) == 1 and len(await h.bot.store.runs.list()) == 1
