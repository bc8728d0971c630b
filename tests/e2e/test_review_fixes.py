"""Regressions found in review: runs told they failed must not run; leases must hold."""

from __future__ import annotations

import asyncio
import json

from tests.e2e.conftest import Harness


async def test_a_run_whose_root_message_could_not_be_posted_never_runs(harness: Harness) -> None:
    h = harness
    h.model.reply(text="Staging is healthy.")
    h.sandbox.fail_next("chat.postMessage", "not_in_channel")
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_REQUESTER"))
    assert "/invite" in json.dumps(h.sandbox.ephemerals("U_REQUESTER"))
    for _ in range(3):  # the sweeps of the next seconds leave it alone
        await h.bot.service.sweep_once()
        await asyncio.sleep(0.3)
    await h.idle()
    assert h.model.requests == []  # the person was told it did not start: nothing ran
    runs = await h.bot.store.list_runs()
    assert all(r.status != "running" for r in runs)
