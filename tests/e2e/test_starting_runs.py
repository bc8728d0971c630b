"""Starting a run: help, unknown agents, empty requests, mentions, a root message Slack refused."""

from __future__ import annotations

import json

from tests.e2e.flows import wait_answer
from tests.e2e.harness import Harness


async def test_help_lists_agents_and_tools(harness: Harness) -> None:
    h = harness
    d = await h.sandbox.slash_command("U_REQUESTER", "help")
    assert d.status == 200
    note = json.dumps(h.sandbox.ephemerals("U_REQUESTER"))
    assert "ops" in note and "deploy" in note and "ask_user" in note
    assert await h.bot.store.runs.list() == []


async def test_unknown_agent_and_empty_request_get_clear_answers(harness: Harness) -> None:
    h = harness
    await h.sandbox.slash_command("U_REQUESTER", "ops")
    assert "Tell `ops` what to do" in json.dumps(h.sandbox.ephemerals("U_REQUESTER"))
    assert await h.bot.store.runs.list() == []


async def test_mention_starts_a_run(harness: Harness) -> None:
    h = harness
    h.model.reply(text="Staging is healthy.")
    await h.sandbox.post_message("U_REQUESTER", "<@U_SAYSO> how is staging?")
    await wait_answer(h, "Staging is healthy.")
    sent = h.model.requests[0]["messages"]
    assert sent[-1]["content"] == "how is staging?"


async def test_a_run_whose_root_message_could_not_be_posted_never_runs(harness: Harness) -> None:
    h = harness
    h.model.reply(text="Staging is healthy.")
    h.sandbox.fail_next("chat.postMessage", "not_in_channel")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_REQUESTER"))
    assert "/invite" in json.dumps(h.sandbox.ephemerals("U_REQUESTER"))
    runs = await h.bot.store.runs.list()
    assert [(r.status, r.lease_owner) for r in runs] == [("failed", None)]  # not for the sweep
    for _ in range(3):  # the sweeps leave it alone
        await h.bot.service.sweep_once()
        await h.idle()
    assert h.model.requests == []  # the person was told it did not start: nothing ran
    runs = await h.bot.store.runs.list()
    assert all(r.status != "running" for r in runs)
