"""Sensitive tool parameters (`Annotated[str, Sensitive()]`) are masked on cards, App Home,
modals, logs and the audit; the edit modal leaves them blank, meaning unchanged; the tool
body still receives the real value (issue 11, finding 9)."""

from __future__ import annotations

import json
import logging

import pytest

from tests.e2e.flows import open_modal, tool_results, wait_answer
from tests.e2e.harness import Harness

SECRET = "hunter2-deploy-token"


async def _secret_card(h: Harness, value: str = SECRET) -> dict:
    h.model.reply(tool_calls=[("set_secret", {"name": "db", "value": value})])
    h.model.reply(text="Stored.")
    await h.sandbox.slash_command("U_REQUESTER", "ops store the db secret")
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1, timeout=10)
    return h.cards()[0]


async def test_cards_and_app_home_mask_the_value_and_the_tool_gets_it(harness: Harness) -> None:
    h = harness
    card = await _secret_card(h)
    shown = json.dumps(card, ensure_ascii=False)
    assert SECRET not in shown and "••••oken" in shown and "db" in shown
    await h.sandbox.open_home("U_APPROVER")
    await h.sandbox.wait_for(lambda sb: sb.home("U_APPROVER"))
    await h.idle()
    home = json.dumps(h.sandbox.home("U_APPROVER"))
    assert "set_secret" in home and SECRET not in home
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Stored.")
    assert h.effects.secrets == [("db", SECRET)]
    assert SECRET not in json.dumps(h.sandbox.message("C_GENERAL", card["ts"]))
    (run,) = await h.bot.store.runs.list()
    trail = await h.bot.store.audit.trail(run.id)
    assert trail and SECRET not in repr(trail)


async def test_the_edit_modal_leaves_it_blank_and_blank_keeps_it(harness: Harness) -> None:
    h = harness
    card = await _secret_card(h)
    view = await open_modal(h, "U_APPROVER", card, "edit")
    assert SECRET not in json.dumps(view)
    block = next(b for b in view["blocks"] if b.get("block_id") == "value")
    assert "initial_value" not in block["element"] and block["optional"] is True
    assert "Leave blank to keep" in json.dumps(block)
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"name": "db2"})
    await wait_answer(h, "Stored.")
    assert h.effects.secrets == [("db2", SECRET)]
    updated = json.dumps(h.sandbox.message("C_GENERAL", card["ts"]), ensure_ascii=False)
    assert SECRET not in updated and "db2" in updated


async def test_a_new_value_typed_in_the_edit_modal_is_used(harness: Harness) -> None:
    h = harness
    card = await _secret_card(h)
    view = await open_modal(h, "U_APPROVER", card, "edit")
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"value": "brand-new-secret-42"})
    await wait_answer(h, "Stored.")
    assert h.effects.secrets == [("db", "brand-new-secret-42")]
    assert "brand-new-secret-42" not in json.dumps(h.sandbox.message("C_GENERAL", card["ts"]))


async def test_an_error_quoting_the_value_is_masked_in_logs_and_slack(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    h = harness
    caplog.set_level(logging.INFO)
    card = await _secret_card(h, value="reject-me-please")
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await wait_answer(h, "Stored.")
    await h.idle()
    assert "the vault refused" in caplog.text
    assert "reject-me-please" not in caplog.text
    assert "reject-me-please" not in h.thread_text()
    assert "the vault refused ••••" in h.thread_text()
    (result,) = tool_results(h)  # the model is told the error, masked too
    assert "reject-me-please" not in result["content"]
