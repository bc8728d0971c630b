"""`/sayso [agent] <request>` and `/sayso help`."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext, AsyncRespond
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError

from bot.slack.blocks import messages
from bot.slack.ids import SLASH_COMMAND
from bot.slack.intake import intake_key_of, recorded, run_id_for
from bot.slack.listeners.common import service_of
from bot.slack.render import agent_infos, slack_text

log = logging.getLogger("sayso.slack")

NOT_IN_CHANNEL = "I can't post in this channel yet. Invite me with `/invite @sayso` and try again."


async def on_sayso(
    ack: AsyncAck,
    command: dict[str, Any],
    respond: AsyncRespond,
    request: AsyncBoltRequest,
    context: AsyncBoltContext,
) -> None:
    """Help and errors in the ack; a run starts after it (in its own thread)."""
    service = service_of(context)
    parsed = service.parse(command.get("text", ""))
    if parsed.kind == "help":
        await ack(**messages.help_message(agent_infos(service.agents, service.policies)))
        return
    if parsed.kind == "error":
        await ack(text=parsed.message)
        return
    await ack()
    signature = (request.headers.get("x-slack-signature") or [""])[0]
    recorded_once = intake_key_of(context) is not None  # the intake deduplicated it
    if signature and not recorded_once and not await service.first_delivery(f"sig:{signature}"):
        log.warning("event=replayed_command: another replica already started this run")
        return
    try:
        outcome = await service.start(
            parsed,
            requester=command["user_id"],
            team_id=command.get("team_id"),
            channel_id=command["channel_id"],
            run_id=run_id_for(context),
        )
        if not outcome.ok and outcome.message:  # who may start, how often: for them alone
            await respond(text=slack_text(outcome.message), response_type="ephemeral")
    except SlackApiError as exc:
        error = exc.response.get("error")
        log.warning("event=start_failed channel=%s error=%s", command.get("channel_id"), error)
        text = (
            NOT_IN_CHANNEL
            if error in ("not_in_channel", "channel_not_found")
            else (f"I could not start the run: Slack answered `{error}`.")
        )
        await respond(text=text, response_type="ephemeral")


def register(app: AsyncApp) -> None:
    app.command(SLASH_COMMAND)(recorded(on_sayso))
