"""A busy process queues continuations without holding their leases."""

from __future__ import annotations

import asyncio

from tests.e2e.flows import actor, card_request_id
from tests.e2e.harness import Harness
from tests.helpers.waiting import eventually


async def test_a_busy_process_queues_runs_without_their_leases(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_max_active_runs": 1}
    await h.start_bot()
    release = asyncio.Event()
    started = asyncio.Event()
    tool = h.bot.service.agents.tool("ops", "deploy")
    body = tool.fn

    async def slow(**kw: object) -> dict:
        started.set()
        await release.wait()
        return await body(**kw)

    tool.fn = slow
    h.model.responder = lambda req: (  # a tool call first, then an answer
        {"choices": [{"message": {"role": "assistant", "content": "done"}}]}
        if any(m["role"] == "tool" for m in req["messages"])
        else {
            "choices": [
                {
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {
                                    "name": "deploy",
                                    "arguments": '{"environment": "staging", "version": "v2"}',
                                },
                            }
                        ],
                    }
                }
            ]
        }
    )
    for text in ("ops deploy one", "ops deploy two"):
        await h.sandbox.slash_command("U_REQUESTER", text)
    await h.sandbox.wait_for(
        lambda sb: (
            sum(
                len(
                    [m for m in sb.thread("C_GENERAL", r["ts"]) if "deploy" in str(m.get("blocks"))]
                )
                > 1
                for r in sb.messages("C_GENERAL")
            )
            == 2
        )
    )
    await h.idle()
    cards = [
        next(m for m in h.sandbox.thread("C_GENERAL", r["ts"]) if "approve" in str(m.get("blocks")))
        for r in h.sandbox.messages("C_GENERAL")
    ]
    for card in cards:
        await h.bot.service.decide(card_request_id(card), actor("U_APPROVER"), "approve")
    await eventually(started.is_set, what="the first deploy to start (and hold the only slot)")
    runs = await h.bot.store.runs.list()
    leased = [r for r in runs if r.lease_owner]
    waiting = [r for r in runs if not r.lease_owner]
    assert len(leased) == 1 and len(waiting) == 1  # the second waits for a slot, unleased
    assert waiting[0].status == "waiting_for_human"
    assert len(await h.bot.store.runs.ready()) == 1  # any replica's sweep may take it
    release.set()
    await h.sandbox.wait_for(lambda sb: h.thread_text().count("done") >= 1, timeout=10)

    async def statuses() -> list[str] | None:
        found = [r.status for r in await h.bot.store.runs.list()]
        return found if found == ["completed", "completed"] else None

    await eventually(statuses, what="both runs to complete")
    assert len(h.effects.deploys) == 2
    tool.fn = body
