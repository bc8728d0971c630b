"""Each listener imported and served alone (a Bolt app holding only it, plus the middleware
that hands it the real service), driven by the sandbox Slack over signed HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.sandbox import GENERAL, default_people
from bot.slack.blocks import messages
from bot.slack.blocks.data import RunInfo
from bot.slack.ids import ActionId, CallbackId
from bot.slack.listeners.actions import on_approve, on_open_form, on_retry
from bot.slack.listeners.events import on_home_opened
from bot.slack.listeners.views import on_reasoned
from tests.helpers.views import filled_views
from tests.slack_listeners.helpers import DeletedPerson, world


def _text(messages: Any) -> str:
    return json.dumps(messages)


async def test_on_approve_decides_and_the_run_continues(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        app = w.app_with_service()
        app.action(ActionId.APPROVE)(on_approve)
        await w.serve(app)
        card = await w.start_deploy()
        w.model.reply(text="Deployed v2.")
        delivery = await w.sandbox.click("U_MEMBER", GENERAL, card["ts"], ActionId.APPROVE)
        assert delivery.status == 200
        await w.sandbox.wait_for(lambda sb: "Deployed v2." in _text(w.thread()))
        assert w.deploys == ["v2"]
        assert "Approved" in _text(w.sandbox.message(GENERAL, card["ts"]) or {})


async def test_on_open_form_then_on_reasoned_rejects_with_the_reason(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        app = w.app_with_service()
        app.action(ActionId.REJECT)(on_open_form)
        app.view(CallbackId.REJECT)(on_reasoned)
        await w.serve(app)
        card = await w.start_deploy()
        w.model.reply(text="Not deployed.")
        await w.sandbox.click("U_MEMBER", GENERAL, card["ts"], ActionId.REJECT)
        # opened after the ack: a loading view at once, filled in once checked
        await w.sandbox.wait_for(lambda sb: filled_views(sb, "U_MEMBER"))
        [form] = filled_views(w.sandbox, "U_MEMBER")
        assert form["callback_id"] == CallbackId.REJECT
        delivery = await w.sandbox.submit_view("U_MEMBER", form["id"], {"reason": "Not today"})
        assert delivery.status == 200
        await w.sandbox.wait_for(lambda sb: "Not deployed." in _text(w.thread()))
        assert w.deploys == []
        assert "Not today" in _text(w.sandbox.message(GENERAL, card["ts"]) or {})


async def test_on_retry_tells_the_person_when_the_run_is_gone(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        app = w.app_with_service()
        app.action(ActionId.RETRY)(on_retry)
        await w.serve(app)
        gone = RunInfo(run_id="RUN_GONE", agent_id="ops", status="failed", request_text="x")
        posted = await w.bot.client.chat_postMessage(
            channel=GENERAL, **messages.run_failed(gone, "boom")
        )
        await w.sandbox.click("U_MEMBER", GENERAL, posted["ts"], ActionId.RETRY)
        await w.sandbox.wait_for(lambda sb: sb.ephemerals("U_MEMBER"))
        assert "This run no longer exists." in _text(w.sandbox.ephemerals("U_MEMBER")[-1])


async def test_a_deleted_account_sees_no_request_open_to_any_member(tmp_path: Path) -> None:
    """A deactivated account may decide nothing (permissions say so): App Home agrees."""
    people = [*default_people(), DeletedPerson("U_GONE", "Gone", "Gone Person")]
    async with world(tmp_path, people) as w:
        app = w.app_with_service()
        app.event("app_home_opened")(on_home_opened)
        await w.serve(app)
        await w.start_deploy()  # the deploy tool names no approver: any full member decides
        for user in ("U_MEMBER", "U_GONE"):
            await w.sandbox.open_home(user)
        await w.sandbox.wait_for(lambda sb: sb.home("U_MEMBER") and sb.home("U_GONE"))

        def approve_buttons(user: str) -> int:
            return _text(w.sandbox.home(user) or {}).count('"action_id": "approve"')

        assert approve_buttons("U_MEMBER") == 1
        assert approve_buttons("U_GONE") == 0
        assert "Nothing is waiting" in _text(w.sandbox.home("U_GONE") or {})
