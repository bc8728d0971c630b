"""Help, mentions, failures with retry, long arguments, bad input from people."""

from __future__ import annotations

import json

from tests.e2e.conftest import Harness, has_button, message_text
from tests.e2e.test_decisions import wait_answer


async def test_help_lists_agents_and_tools(harness: Harness) -> None:
    h = harness
    d = await h.sandbox.slash_command("U_REQUESTER", "help")
    assert d.status == 200
    note = json.dumps(h.sandbox.ephemerals("U_REQUESTER"))
    assert "ops" in note and "deploy" in note and "ask_user" in note
    assert await h.bot.store.list_runs() == []


async def test_unknown_agent_and_empty_request_get_clear_answers(harness: Harness) -> None:
    h = harness
    await h.sandbox.slash_command("U_REQUESTER", "ops")
    assert "Tell `ops` what to do" in json.dumps(h.sandbox.ephemerals("U_REQUESTER"))
    assert await h.bot.store.list_runs() == []


async def test_mention_starts_a_run(harness: Harness) -> None:
    h = harness
    h.model.reply(text="Staging is healthy.")
    await h.sandbox.post_message("U_REQUESTER", "<@U_SAYSO> how is staging?")
    await wait_answer(h, "Staging is healthy.")
    sent = h.model.requests[0]["messages"]
    assert sent[-1]["content"] == "how is staging?"


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
    run = (await h.bot.store.list_runs())[0]
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
    assert (await h.bot.store.list_runs())[0].status == "failed"


async def test_long_arguments_are_cut_with_a_view_full_arguments_modal(harness: Harness) -> None:
    h = harness
    version = "v" + "9" * 5000
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": version})])
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy the long one")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    card = h.cards()[0]
    assert has_button(card, "view_args")
    assert "cut" in message_text(card).lower()
    await h.sandbox.click("U_MEMBER", "C_GENERAL", card["ts"], "view_args")
    view = (await h.sandbox.wait_for(lambda sb: sb.open_views("U_MEMBER")))[-1]
    assert view["callback_id"] == "sayso_view_args"
    shown = "".join(message_text({"blocks": [b]}) for b in view["blocks"])
    assert shown.count("9") >= 5000
    assert not [c for c in h.sandbox.calls if not c.response.get("ok")]  # Slack accepted all


async def test_unknown_request_reference_is_refused_politely(harness: Harness) -> None:
    h = harness
    outcome = await h.bot.service.decide("does-not-exist", _actor("U_APPROVER"), "approve")
    assert outcome.kind == "not_found"


def _actor(user: str):  # type: ignore[no-untyped-def]
    from bot.service import Actor

    return Actor(user_id=user, team_id="T_SANDBOX")


async def test_healthz_reports_the_database(harness: Harness) -> None:
    import aiohttp

    async with aiohttp.ClientSession() as s, s.get(f"{harness.url}/healthz") as r:
        assert r.status == 200
        assert (await r.json())["database"] == "reachable"


async def test_a_crash_inside_the_agent_fails_the_run_once_and_retry_recovers(
    harness: Harness,
) -> None:
    h = harness
    h.model.reply(text="BOOM")
    await h.sandbox.slash_command("U_REQUESTER", "ops do the thing")
    await h.sandbox.wait_for(lambda sb: any(has_button(m, "retry") for m in h.thread()))
    failure = next(m for m in h.thread() if has_button(m, "retry"))
    assert "the review hook crashed" in message_text(failure)
    run = (await h.bot.store.list_runs())[0]
    assert run.status == "failed" and run.lease_owner is None
    await h.bot.service.sweep_once()  # sweeps do not pick a failed run up again
    await h.idle()
    assert sum(1 for m in h.thread() if has_button(m, "retry")) == 1
    h.model.reply(text="Done after retry.")
    await h.sandbox.click("U_REQUESTER", "C_GENERAL", failure["ts"], "retry")
    await wait_answer(h, "Done after retry.")
