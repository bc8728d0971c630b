"""A run that failed (the model, or the agent's own code) shows the error and a Retry button
that only its requester may use."""

from __future__ import annotations

from tests.e2e.flows import wait_answer
from tests.e2e.harness import Harness, has_button, message_text


async def test_model_failure_shows_the_error_and_retry_continues(harness: Harness) -> None:
    h = harness
    h.model.fail(503)
    h.model.fail(503)
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: any(has_button(m, "retry") for m in h.thread()))
    failure = next(m for m in h.thread() if has_button(m, "retry"))
    assert "503" in message_text(failure)
    h.model.reply(text="Recovered: staging is healthy.")
    await h.sandbox.click("U_REQUESTER", "C_GENERAL", failure["ts"], "retry")
    await wait_answer(h, "Recovered: staging is healthy.")
    run = (await h.bot.store.runs.list())[0]
    assert run.status == "completed"


async def test_retry_by_someone_else_is_refused(harness: Harness) -> None:
    h = harness
    h.model.fail(500)
    h.model.fail(500)
    await h.sandbox.slash_command("U_REQUESTER", "ops how is staging")
    await h.sandbox.wait_for(lambda sb: any(has_button(m, "retry") for m in h.thread()))
    failure = next(m for m in h.thread() if has_button(m, "retry"))
    await h.sandbox.click("U_GUEST", "C_GENERAL", failure["ts"], "retry")
    await h.sandbox.wait_for(lambda sb: sb.ephemerals("U_GUEST"))
    assert (await h.bot.store.runs.list())[0].status == "failed"


async def test_a_crash_inside_the_agent_fails_the_run_once_and_retry_recovers(
    harness: Harness,
) -> None:
    h = harness
    h.model.reply(text="BOOM")
    await h.sandbox.slash_command("U_REQUESTER", "ops do the thing")
    await h.sandbox.wait_for(lambda sb: any(has_button(m, "retry") for m in h.thread()))
    failure = next(m for m in h.thread() if has_button(m, "retry"))
    assert "the review hook crashed" in message_text(failure)
    run = (await h.bot.store.runs.list())[0]
    assert run.status == "failed" and run.lease_owner is None
    await h.bot.service.sweep_once()  # sweeps do not pick a failed run up again
    await h.idle()
    assert sum(1 for m in h.thread() if has_button(m, "retry")) == 1
    h.model.reply(text="Done after retry.")
    await h.sandbox.click("U_REQUESTER", "C_GENERAL", failure["ts"], "retry")
    await wait_answer(h, "Done after retry.")
