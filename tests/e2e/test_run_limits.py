"""Finding 3 of issue 11: how many runs a person starts, how long a follow-up may be, and how
much history reaches the model."""

from __future__ import annotations

import json

from bot.agent import Agent
from bot.agent.models import ModelSettings, OpenAIChatModel
from tests.e2e.audit import audit_events_of
from tests.e2e.flows import wait_answer
from tests.e2e.harness import Harness, has_button


def ephemeral_text(h: Harness, user: str) -> str:
    return json.dumps(h.sandbox.ephemerals(user))


async def test_eleven_commands_in_a_minute_start_ten_runs(harness: Harness) -> None:
    h = harness
    for i in range(11):
        h.model.reply(text=f"Answer {i}.")
    for i in range(11):
        delivery = await h.sandbox.slash_command("U_REQUESTER", f"ops question {i}")
        assert delivery.status == 200
    await h.sandbox.wait_for(lambda sb: "try again" in ephemeral_text(h, "U_REQUESTER"))
    await h.sandbox.wait_for(lambda sb: len(h.model.requests) >= 10, timeout=15)
    await h.idle()
    assert len(await h.bot.store.runs.list()) == 10
    assert len(h.model.requests) == 10  # the refused one made no model call
    assert "10 runs" in ephemeral_text(h, "U_REQUESTER")
    events = await audit_events_of(h.bot.store, "U_REQUESTER")
    assert [e for e in events if e[0] == "rate_limited"] == [
        ("rate_limited", "denied", "10/minute")
    ]
    # someone else is not limited by Riley's runs
    h.model.reply(text="Yours.")
    await h.sandbox.slash_command("U_MEMBER", "ops my question")
    await h.sandbox.wait_for(lambda sb: len(h.model.requests) == 11, timeout=15)


async def test_follow_ups_and_mentions_count_too(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_rate_limit": "2/hour"}
    await h.start_bot()
    h.model.reply(text="First.")
    await h.sandbox.slash_command("U_REQUESTER", "ops first")
    await wait_answer(h, "First.")
    h.model.reply(text="Second.")
    await h.sandbox.post_message("U_REQUESTER", "and then?", thread_ts=h.root()["ts"])
    await wait_answer(h, "Second.")
    await h.sandbox.post_message("U_REQUESTER", "and after that?", thread_ts=h.root()["ts"])
    await h.sandbox.wait_for(lambda sb: "try again" in ephemeral_text(h, "U_REQUESTER"))
    await h.sandbox.post_message("U_REQUESTER", "<@U_SAYSO> ops a third thing")
    await h.sandbox.wait_for(lambda sb: ephemeral_text(h, "U_REQUESTER").count("try again") == 2)
    await h.idle()
    assert len(h.model.requests) == 2 and len(await h.bot.store.runs.list()) == 2


async def test_a_39000_character_follow_up_is_refused(harness: Harness) -> None:
    h = harness
    h.model.reply(text="Staging is healthy.")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await wait_answer(h, "Staging is healthy.")
    await h.sandbox.post_message("U_REQUESTER", "x" * 39_000, thread_ts=h.root()["ts"])
    await h.sandbox.wait_for(lambda sb: "too long" in ephemeral_text(h, "U_REQUESTER"))
    await h.idle()
    assert "4,000" in ephemeral_text(h, "U_REQUESTER")
    assert len(h.model.requests) == 1 and len(await h.bot.store.runs.list()) == 1


async def test_long_follow_ups_keep_the_prompt_under_the_bound(harness: Harness) -> None:
    h = harness
    bound = 48_000  # the default max_history_chars
    model = OpenAIChatModel("fake", base_url=h.model.base_url, api_key="test-key")
    quick = ModelSettings(timeout=5, max_retries=1, backoff_base=0.01, backoff_max=0.05)
    await h.stop_bot()
    await h.start_bot([Agent(id="ops", model=model, model_settings=quick)])
    answer = "A long answer. " * 1_000  # 15,000 characters
    h.model.reply(text="0 " + answer)
    await h.sandbox.slash_command("U_REQUESTER", "ops " + "tell me everything " * 200)
    await wait_answer(h, "A long answer.")
    for i in range(1, 6):
        h.model.reply(text=f"{i} " + answer)
        reply = f"follow-up {i}: " + "and more " * 400  # 3,600 characters
        await h.sandbox.post_message("U_REQUESTER", reply, thread_ts=h.root()["ts"])
        await h.sandbox.wait_for(lambda sb, i=i: len(h.model.requests) == i + 1, timeout=10)
        await h.idle()
    sizes = [sum(len(m.get("content") or "") for m in r["messages"]) for r in h.model.requests]
    assert max(sizes) <= bound, sizes
    last = h.model.last_request["messages"]
    assert last[-1]["content"].startswith("follow-up 5:")  # the newest turn is always sent
    assert "Earlier turns of this conversation were dropped" in last[0]["content"]
    assert last[1]["role"] == "user"  # whole turns are dropped, never half of one
    assert "Earlier turns" not in h.model.requests[0]["messages"][0]["content"]


async def test_retries_count_too(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_rate_limit": "2/hour"}
    await h.start_bot()
    h.model.fail(500)
    h.model.fail(500)
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: any(has_button(m, "retry") for m in h.thread()))
    h.model.fail(500)
    h.model.fail(500)
    failure = next(m for m in h.thread() if has_button(m, "retry"))
    await h.sandbox.click("U_REQUESTER", "C_GENERAL", failure["ts"], "retry")  # the second start
    await h.sandbox.wait_for(lambda sb: len(h.model.requests) == 4)
    await h.sandbox.wait_for(lambda sb: sum(has_button(m, "retry") for m in h.thread()) == 2)
    await h.idle()
    again = [m for m in h.thread() if has_button(m, "retry")][-1]
    await h.sandbox.click("U_REQUESTER", "C_GENERAL", again["ts"], "retry")
    await h.sandbox.wait_for(lambda sb: "try again" in ephemeral_text(h, "U_REQUESTER"))
    await h.idle()
    assert len(h.model.requests) == 4
    assert (await h.bot.store.runs.list())[0].status == "failed"
