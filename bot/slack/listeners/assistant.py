"""The assistant side pane (Bolt's Assistant): suggested prompts, and a run per message.

Opening the pane lists the agents as suggested prompts. A message in the pane starts a run
of the chosen (or only) agent in that assistant thread, with a status while it works; its
cards, status and answer land in the same thread (Slack clears the status when sayso replies).
Permissions, limits and policies are those of any other run.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncAssistant, AsyncBoltContext
from slack_bolt.context.say.async_say import AsyncSay
from slack_bolt.context.set_status.async_set_status import AsyncSetStatus
from slack_bolt.context.set_suggested_prompts.async_set_suggested_prompts import (
    AsyncSetSuggestedPrompts,
)

from bot.slack.blocks import limits as L
from bot.slack.blocks.fmt import one_line
from bot.slack.intake import intake_key_of, recorded, run_id_for
from bot.slack.listeners.common import service_of

log = logging.getLogger("sayso.slack")

MAX_PROMPTS = 4  # Slack shows up to four suggested prompts
WELCOME = "Hi! Ask one of the agents below, or write `<agent> <request>`."
WORKING = "is working on it…"


def suggested_prompts(agents: list[tuple[str, str]]) -> list[dict[str, str]]:
    """One prompt per agent (id, description): its name as the title, a message to start it."""
    return [
        {
            "title": L.cut_text(f"{agent_id}: {one_line(description)}", 75),
            "message": f"{agent_id} what can you do for me?",
        }
        for agent_id, description in agents[:MAX_PROMPTS]
    ]


async def on_thread_started(
    say: AsyncSay, set_suggested_prompts: AsyncSetSuggestedPrompts, context: AsyncBoltContext
) -> None:
    service = service_of(context)
    agents = [(a.id, a.description or a.id) for a in service.agents]
    await say(WELCOME)
    if agents:
        await set_suggested_prompts(prompts=suggested_prompts(agents), title="Start an agent")


async def on_user_message(
    body: dict[str, Any],
    payload: dict[str, Any],
    say: AsyncSay,
    set_status: AsyncSetStatus,
    context: AsyncBoltContext,
) -> None:
    service = service_of(context)
    user, channel = payload.get("user"), payload.get("channel")
    thread_ts = payload.get("thread_ts")
    if not user or not channel or not thread_ts:
        return
    recorded_once = intake_key_of(context) is not None  # the intake deduplicated it
    event_id = body.get("event_id")
    if event_id and not recorded_once and not await service.first_delivery(str(event_id)):
        return
    parsed = service.parse(payload.get("text", ""))
    if parsed.kind == "help":
        await say(WELCOME)
        return
    if parsed.kind == "error":
        await say(parsed.message)
        return
    await set_status(WORKING)
    team_id = payload.get("team") or body.get("team_id")
    await service.start(
        parsed,
        requester=user,
        team_id=team_id,
        channel_id=channel,
        thread_ts=thread_ts,
        run_id=run_id_for(context),
    )


def register(app: AsyncApp) -> None:
    assistant = AsyncAssistant()
    assistant.thread_started(on_thread_started)
    assistant.user_message(recorded(on_user_message))
    app.use(assistant)
