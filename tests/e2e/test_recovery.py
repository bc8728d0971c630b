"""A replica dies holding a run: another process continues it; started calls are not re-run;
a lease holder keeps its run through a failed renewal; cards a process failed to post are
posted by the sweep."""

from __future__ import annotations

import asyncio
import os

import pytest

from tests.e2e.flows import start_deploy, wait_answer
from tests.e2e.harness import Harness, has_button, message_text
from tests.helpers.waiting import eventually


async def crash(h: Harness) -> None:
    """Stop the bot the way a killed process stops: no lease release, no goodbye."""
    assert h.bot is not None
    bot = h.bot
    h.bot = None
    for task in list(bot.service.tasks.snapshot()):
        task.cancel()
    await asyncio.gather(*bot.service.tasks.snapshot(), return_exceptions=True)
    await bot.service.stop_sweeper()
    if bot.dispatcher is not None:  # dead too: its sender lease lapses, nobody releases it
        await bot.dispatcher.abort()
    if h._runner is not None:
        await h._runner.cleanup()
        h._runner = None
    await bot.store.close()


@pytest.mark.skipif(
    os.environ.get("SAYSO_TEST_SPLIT") == "1",
    reason="kills the in-process runner in place; split, tests/fault/test_workers.py kills a "
    "worker process and tests/fault/test_replicas.py a whole replica",
)
async def test_run_held_by_a_dead_replica_is_recovered_by_another(harness: Harness) -> None:
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_lease_seconds": 2}
    await h.start_bot()
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v2"})])
    h.model.reply(text="Deployed after recovery.")
    release = asyncio.Event()
    original = h.effects.deploys

    class Hanging(list):
        def append(self, item: object) -> None:  # the tool body hangs after its side effect
            super().append(item)
            h.hung = True

    h.effects.deploys = Hanging()
    h.hung = False
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    card = h.cards()[0]
    bot_a = h.bot
    assert bot_a is not None
    # make the body block forever after it recorded its side effect
    tool = bot_a.service.agents.tool("ops", "deploy")
    body = tool.fn

    async def hanging_body(**kw: object) -> dict:
        result = await body(**kw)
        await release.wait()
        return result

    tool.fn = hanging_body
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda sb: len(h.effects.deploys) == 1)
    await crash(h)  # replica A dies inside the tool body
    tool.fn = body
    await h.start_bot()  # replica B, same database
    # B's sweeper finds the lapsed lease, recovers, and shows the interrupted call
    await h.sandbox.wait_for(
        lambda sb: any("interrupted" in message_text(m).lower() for m in h.cards()), timeout=15
    )
    interrupted = next(m for m in h.cards() if "interrupted" in message_text(m).lower())
    assert has_button(interrupted, "approve")
    assert len(h.effects.deploys) == 1  # not re-run on its own
    await h.sandbox.click("U_APPROVER", "C_GENERAL", interrupted["ts"], "approve")
    await wait_answer(h, "Deployed after recovery.")
    assert len(h.effects.deploys) == 2  # a person chose to run it again
    keys = {d["key"] for d in h.effects.deploys}
    assert len(keys) == 1  # same idempotency key: downstream can dedupe
    run = (await h.bot.store.runs.list())[0]
    assert run.status == "completed"
    trail = await h.bot.store.audit.trail(run.id)
    assert sum(1 for e in trail if e.action == "decide" and e.outcome == "won") == 2
    h.effects.deploys = original


async def test_one_failed_lease_renewal_does_not_hand_a_running_tool_to_another_process(
    harness: Harness,
) -> None:
    """A renewal can fail once (a database blip, or a save that advanced the version while
    the renewal was in flight): the holder must keep renewing while a long body runs, or the
    sweep takes the run over and shows the running call as interrupted."""
    h = harness
    await h.stop_bot()
    h.settings_overrides = {"sayso_lease_seconds": 1}
    await h.start_bot()
    assert h.bot is not None
    store = h.driver.store  # the store of whoever holds the run's lease
    real_renew = store.runs.renew
    blips: list[str] = []

    async def renew_once_failing(lease):  # type: ignore[no-untyped-def]
        if not blips:
            blips.append(lease.run_id)
            raise ConnectionResetError("connection to the database was reset")
        return await real_renew(lease)

    store.runs.renew = renew_once_failing  # type: ignore[method-assign]
    tool = h.bot.service.agents.tool("ops", "deploy")
    body = tool.fn

    async def slow_body(**kw: object) -> dict:
        result = await body(**kw)
        await asyncio.sleep(3)  # the behaviour: a deploy that outlasts three lease lengths
        return result

    tool.fn = slow_body
    try:
        card = await start_deploy(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        await wait_answer(h, "Deployed v2 to staging.")
    finally:
        tool.fn = body
    assert blips
    assert "interrupted" not in h.thread_text().lower()  # the call was still running
    assert h.cards() == []  # nothing left asking for a decision
    assert len(h.effects.deploys) == 1
    run = (await h.bot.store.runs.list())[0]
    assert run.status == "completed"


async def test_cards_a_process_failed_to_post_are_posted_by_the_sweep(
    harness: Harness, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import bot.service.sweeper

    h = harness
    monkeypatch.setattr(bot.service.sweeper, "CARD_GRACE", __import__("datetime").timedelta(0))
    presenter = h.driver.show.inner  # whoever drives the run posts its cards
    real = presenter.post_card
    failures = []

    async def flaky(run, request):  # type: ignore[no-untyped-def]
        if not failures:
            failures.append(request.id)
            raise ConnectionError("Slack was unreachable")
        return await real(run, request)

    monkeypatch.setattr(presenter, "post_card", flaky)
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v2"})])
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    assert failures

    async def posted_request():  # type: ignore[no-untyped-def]
        request = await h.bot.store.requests.get(failures[0])
        return request if request is not None and request.state.message_ts else None

    request = await eventually(posted_request, what="the sweep to record where it posted the card")
    assert request.state.message_ts == h.cards()[0]["ts"]
    await h.idle()
    assert len(h.cards()) == 1
