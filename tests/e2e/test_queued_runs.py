"""Behind a busy worker, a new run's root message appears at once and says it is queued, then
shows the run's progress once a worker takes it (front and worker split, as `sayso run`)."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.testing.fake_model import chat_completion
from tests.e2e.harness import Harness, message_text
from tests.helpers.waiting import eventually


async def test_a_run_behind_a_full_worker_says_queued_then_completes(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.split = True
    h.settings_overrides = {"sayso_worker_concurrency": 1}
    await h.start_bot()
    release = asyncio.Event()

    async def held_model(body: dict[str, Any]) -> dict[str, Any]:
        await release.wait()
        return chat_completion(text="All good.", request=body)

    h.model.responder = held_model
    sb = h.sandbox
    for i in range(3):
        delivery = await sb.slash_command("U_REQUESTER", f"ops status of host {i}")
        assert delivery.ok, delivery.summary()
        await sb.wait_for(lambda s, n=i + 1: len(s.messages("C_GENERAL")) == n)
        if i == 0:  # the worker's one slot is taken by the first run
            await eventually(lambda: len(h.model.requests) == 1, what="the first run's model call")
        if i == 1:  # its root is shown a moment before it is handed to the (full) worker
            assert h.bot is not None
            store = h.bot.store
            await eventually(store.runs.count_ready, what="the second run waiting for the worker")
    roots = sb.messages("C_GENERAL")
    assert "queued" not in message_text(roots[0]).lower()
    assert "queued" not in message_text(roots[1]).lower()  # nothing waited before it
    assert "Queued: 1 run ahead" in message_text(roots[2])
    release.set()

    def all_completed(s: Any) -> bool:
        return all("Completed" in message_text(m) for m in s.messages("C_GENERAL"))

    await sb.wait_for(all_completed, timeout=15)
    assert len(h.model.requests) == 3
