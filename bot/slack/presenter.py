"""Shows runs in Slack: the root message, its thread, cards, ephemerals and App Home."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.registry import AgentRegistry
from bot.slack.blocks import cards, messages
from bot.slack.render import card_info, run_info
from store import ApprovalRequestRecord, RunRecord

log = logging.getLogger("sayso.slack")


class SlackPresenter:
    def __init__(
        self,
        client: AsyncWebClient,
        agents: AgentRegistry,
        home_refresher: Callable[[str], Awaitable[None]] | None = None,
        closing: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.client = client
        self.agents = agents
        self.home_refresher = home_refresher
        self.closing = closing

    async def close(self) -> None:
        """Cancel refreshes still waiting (coalesced App Home refreshes)."""
        if self.closing is not None:
            await self.closing()

    async def _post(self, run: RunRecord, message: dict[str, Any]) -> str | None:
        if not run.channel_id:
            return None
        resp = await self.client.chat_postMessage(
            channel=run.channel_id, thread_ts=run.thread_ts, **message
        )
        return str(resp["ts"])

    async def post_root(self, run: RunRecord, *, queued_ahead: int = 0) -> str:
        """The message that starts the run's thread; its ts becomes the thread's. With
        `queued_ahead`, its status says how many runs wait for a worker before it."""
        if not run.channel_id:
            raise ValueError(f"run {run.id} has no channel to post its first message in")
        resp = await self.client.chat_postMessage(
            channel=run.channel_id,
            **messages.root_message(replace(run_info(run), queued_ahead=queued_ahead)),
        )
        return str(resp["ts"])

    async def update_root(self, run: RunRecord) -> None:
        if run.channel_id and run.thread_ts and run.requester is not None:
            message = messages.root_message(run_info(run))
            await self.client.chat_update(channel=run.channel_id, ts=run.thread_ts, **message)

    async def post_card(self, run: RunRecord, request: ApprovalRequestRecord) -> str | None:
        return await self._post(run, cards.request_card(card_info(request, run, self.agents)))

    async def update_card(self, run: RunRecord, request: ApprovalRequestRecord) -> None:
        if not (request.channel_id and request.message_ts):
            return
        message = cards.request_card(card_info(request, run, self.agents))
        await self.client.chat_update(channel=request.channel_id, ts=request.message_ts, **message)

    async def post_progress(self, run: RunRecord, text: str) -> None:
        await self._post(run, messages.progress(text))

    async def post_answer(self, run: RunRecord, text: str) -> None:
        await self._post(run, messages.final_answer(text, run_info(run)))

    async def post_failure(self, run: RunRecord, error: str) -> None:
        await self._post(run, messages.run_failed(run_info(run, error), error))

    async def post_reminder(self, run: RunRecord, request: ApprovalRequestRecord) -> None:
        card = card_info(request, run, self.agents)
        await self._post(run, messages.reminder(card, list(card.approvers)))

    async def notify(self, user_id: str, channel_id: str, text: str, thread_ts: str | None) -> None:
        try:
            await self.client.chat_postEphemeral(
                channel=channel_id, user=user_id, thread_ts=thread_ts, text=text
            )
        except SlackApiError as exc:
            log.warning(
                "event=ephemeral_failed user=%s error=%s", user_id, exc.response.get("error")
            )

    async def refresh_home(self, user_id: str) -> None:
        if self.home_refresher is not None:
            await self.home_refresher(user_id)
