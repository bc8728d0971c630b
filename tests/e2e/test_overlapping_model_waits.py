"""Runs awaiting their model overlap: fifty runs whose model answers after 1 s each finish
in a few seconds on one worker, not in fifty (a waiting run holds no CPU slot)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bot.testing.fake_model import chat_completion
from tests.e2e.harness import Harness
from tests.helpers.waiting import eventually

RUNS = 50
MODEL_LATENCY = 1.0


async def test_fifty_runs_with_a_one_second_model_finish_together(harness: Harness) -> None:
    h = harness
    await h.stop_bot()  # one person starts all fifty: past SAYSO_RATE_LIMIT's default
    h.settings_overrides = {"sayso_rate_limit": "off"}
    await h.start_bot()
    waiting = 0
    peak = 0
    answered_at: list[float] = []

    async def slow_model(body: dict[str, Any]) -> dict[str, Any]:
        nonlocal waiting, peak
        waiting += 1
        peak = max(peak, waiting)
        try:
            await asyncio.sleep(MODEL_LATENCY)
        finally:
            waiting -= 1
        answered_at.append(time.monotonic())
        return chat_completion(text="All good.", request=body)

    h.model.responder = slow_model
    started = time.monotonic()
    deliveries = await asyncio.gather(
        *(h.sandbox.slash_command("U_REQUESTER", f"ops status of host {i}") for i in range(RUNS))
    )
    assert all(d.ok for d in deliveries), [d.summary() for d in deliveries if not d.ok]
    assert h.bot is not None
    store = h.bot.store

    async def all_completed() -> bool:
        runs = await store.runs.list(limit=RUNS + 10)
        return len(runs) == RUNS and all(r.status == "completed" for r in runs)

    await eventually(all_completed, timeout=RUNS * MODEL_LATENCY, what="every run to complete")
    elapsed = time.monotonic() - started
    assert len(answered_at) == RUNS  # one model request per run, none repeated
    # The waits overlapped: many runs awaited the model at the same time (one at a time
    # would be 1; how many depends on how fast the fifty commands arrive).
    assert peak >= RUNS // 5, f"at most {peak} runs awaited the model at once"
    # Serially this would take RUNS * MODEL_LATENCY = 50 s; overlapped, a few seconds (about
    # 8 on 2 busy cores, split: the bound is not a speed target, bench/ has those).
    assert elapsed < RUNS * MODEL_LATENCY / 2, f"{RUNS} runs took {elapsed:.1f}s"
