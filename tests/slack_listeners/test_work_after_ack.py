"""The work a click does after its ack waits for its person's fair turn (bot/slack/intake.py,
`Service.intake_turns`): a burst of clicks is acked at once, worked a few at a time, and a
click of someone else, arriving behind the burst, is worked before the rest of it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from slack_bolt.async_app import AsyncBoltContext

from bot.sandbox import GENERAL
from bot.slack.ids import ActionId
from bot.slack.intake import RecordIntake, recorded, use_intake
from bot.slack.listeners.common import SERVICE_KEY
from tests.slack_listeners.helpers import world

SLOTS = 8  # max(2, min(8, max_active_runs)): the default allows 200 runs at once


async def test_clicks_are_acked_at_once_and_worked_in_fair_turns(tmp_path: Path) -> None:
    async with world(tmp_path) as w:
        release = asyncio.Event()
        working: list[str] = []  # whose work is under way, in the order it started
        most = 0
        done: list[str] = []

        async def on_approve(ack: Any, body: dict[str, Any], context: AsyncBoltContext) -> None:
            nonlocal most
            await ack()
            person = body["user"]["id"]
            working.append(person)
            most = max(most, len(working) - len(done))
            # the decision it records asks for a turn too: it goes on in its own
            async with context[SERVICE_KEY].intake_turns.turn(None, person):
                await release.wait()
            done.append(person)

        app = w.app_with_service()
        recorder = RecordIntake.on(w.service.store, lease=30.0)
        use_intake(app, recorder)
        app.action(ActionId.APPROVE)(recorded(on_approve))
        await w.serve(app)
        button = {
            "type": "button",
            "action_id": ActionId.APPROVE,
            "text": {"type": "plain_text", "text": "Approve"},
            "value": "req-1",
        }
        message = await w.bot.client.chat_postMessage(
            channel=GENERAL, text="a card", blocks=[{"type": "actions", "elements": [button]}]
        )
        ts = str(message["ts"])

        burst = await asyncio.wait_for(
            asyncio.gather(
                *(w.sandbox.click("U_MEMBER", GENERAL, ts, ActionId.APPROVE) for _ in range(20))
            ),
            timeout=5,  # acked while every turn is taken and twelve clicks wait for one
        )
        assert [d.status for d in burst] == [200] * 20
        await w.sandbox.wait_for(lambda _: len(working) == SLOTS, timeout=5)
        other = await w.sandbox.click("U_REQUESTER", GENERAL, ts, ActionId.APPROVE)
        assert other.status == 200
        await asyncio.sleep(0.3)
        assert len(working) == SLOTS  # the others wait for a turn, acked
        release.set()
        await w.sandbox.wait_for(lambda _: len(done) == 21, timeout=10)
        assert most == SLOTS
        # someone with no turn yet goes first when a slot frees, before the burst's rest
        assert working.index("U_REQUESTER") == SLOTS
        await recorder.close()
