"""Shows runs in Slack: the root message, its thread, cards, ephemerals and App Home."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.service.ports import (
    STATUS,
    Answered,
    AutoApproved,
    Cancelled,
    CardPlace,
    Escalated,
    Failed,
    Notice,
    Reminder,
    RunChange,
    StandingApprovalShown,
    Status,
    ToolFailed,
)
from bot.service.registry import AgentRegistry
from bot.slack.blocks import cards, grants, home, messages
from bot.slack.home_refresh import HomeRefresher
from bot.slack.live_status import LiveStatus
from bot.slack.render import card_info, run_info
from bot.slack.streaming import AnswerStream
from store import ApprovalRequestRecord, GrantRecord, RunRecord

if TYPE_CHECKING:
    from bot.service import Service

log = logging.getLogger("sayso.slack")


class SlackPresenter:
    def __init__(self, client: AsyncWebClient, agents: AgentRegistry) -> None:
        self.client = client
        self.agents = agents
        self.homes: HomeRefresher | None = None
        self.live = LiveStatus(client)
        self._streams: dict[str, AnswerStream] = {}
        self._session: aiohttp.ClientSession | None = None

    def attach(self, service: Service) -> None:
        """App Home shows the service's inbox: refreshed (coalesced) after the changes that
        concern a person, a reaction here in Slack, never a call back from the service."""

        async def home_of(user_id: str) -> dict[str, Any]:
            inbox = await service.inbox(user_id)
            return home.home_view(
                [card_info(request, run, self.agents) for request, run in inbox.pending],
                inbox.total,
                [run_info(r) for r in inbox.recent_runs],
                user_id=user_id,
                total_is_lower_bound=inbox.total_is_lower_bound,
            )

        async def publish(user_id: str, view: dict[str, Any]) -> None:
            await self.client.views_publish(user_id=user_id, view=view)

        self.homes = HomeRefresher(home_of, publish)

    def _share_connections(self) -> None:
        """Give the Web API client one HTTP session (on this event loop): without one,
        slack-sdk opens and closes a session, and a TCP connection, for every call."""
        current = self.client.session
        if current is None or current.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.client.timeout)
            )
            self.client.session = self._session

    async def close(self) -> None:
        """Cancel refreshes still waiting (coalesced App Home refreshes); close the HTTP
        session this presenter opened (the client makes its own per call again)."""
        if self.homes is not None:
            await self.homes.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _post(self, run: RunRecord, message: dict[str, Any]) -> str | None:
        self._share_connections()
        if not run.channel_id:
            return None
        resp = await self.client.chat_postMessage(
            channel=run.channel_id, thread_ts=run.thread_ts, **message
        )
        return str(resp["ts"])

    # -- the presentation port (bot/service/ports.py) ----------------------------------------

    async def open_thread(self, run: RunRecord, *, queued_ahead: int = 0) -> str:
        """The message that starts the run's thread; its ts becomes the thread's. With
        `queued_ahead`, its status says how many runs wait for a worker before it."""
        self._share_connections()
        if not run.channel_id:
            raise ValueError(f"run {run.id} has no channel to post its first message in")
        resp = await self.client.chat_postMessage(
            channel=run.channel_id,
            **messages.root_message(replace(run_info(run), queued_ahead=queued_ahead)),
        )
        return str(resp["ts"])

    async def update_root(self, run: RunRecord) -> None:
        """Show the run's status on its root message (not again if the live status already
        shows exactly this)."""
        self._share_connections()
        if run.channel_id and run.thread_ts and run.requester is not None:
            message = messages.root_message(run_info(run))
            if self.live.root_shown(run.id) == message:
                return
            await self.client.chat_update(channel=run.channel_id, ts=run.thread_ts, **message)
            self.live.note_root(run.id, message)

    def card_channel(self, run: RunRecord, request: ApprovalRequestRecord) -> str | None:
        """The run's thread, or the agent's channel when the run is in the requester's side
        pane (a DM) and the card needs someone else, who could not see it there."""
        agent = self.agents.get(run.agent_id)
        in_pane = bool(run.channel_id and run.channel_id.startswith("D"))
        if not (in_pane and agent is not None and agent.channel):
            return run.channel_id
        tool = self.agents.tool(run.agent_id, request.tool_name)
        approvers = [a for a in request.approvers if a != "*"]
        others = bool(approvers) and run.requester not in approvers
        return (
            agent.channel if others or (tool and not tool.allow_self_approval) else run.channel_id
        )

    async def run_changed(self, run: RunRecord, change: RunChange = STATUS) -> None:
        if isinstance(change, Status):
            if not change.follow_up:
                await self.update_root(run)
            if run.requester:
                await self.refresh_home(run.requester)
        elif change == "activity":
            await self.show_activity(run)
        elif isinstance(change, Answered):
            await self.post_answer(run, change.text, change.truncated)
        elif isinstance(change, Failed):
            await self.post_failure(run, change.error)
        elif isinstance(change, Cancelled):
            await self._post(run, messages.run_cancelled(change.by))

    async def post_card(self, run: RunRecord, request: ApprovalRequestRecord) -> CardPlace | None:
        channel = self.card_channel(run, request)
        ts = await self._post_card(run, request, channel)
        return CardPlace(channel, ts) if ts and channel else None

    async def request_changed(self, run: RunRecord, request: ApprovalRequestRecord) -> None:
        """The card shows the request as it is now; the App Home of whoever just acted on it
        follows (coalesced)."""
        await self.update_card(run, request)
        for user in {request.decided_by, *request.approvals[-1:]}:
            if user and user[:1] in ("U", "W"):
                await self.refresh_home(user)

    async def say(self, notice: Notice, run: RunRecord | None = None) -> str | None:
        if isinstance(notice, StandingApprovalShown):
            return await self._show_standing(notice.standing, run)
        if run is None:
            return None
        if isinstance(notice, ToolFailed):
            text = f":warning: `{notice.tool}` failed: {notice.detail}"
            await self._post(run, messages.progress(text))
        elif isinstance(notice, Reminder):
            card = card_info(notice.request, run, self.agents)
            await self._post(run, messages.reminder(card, list(card.approvers)))
        elif isinstance(notice, Escalated):
            await self._post(run, messages.escalation(card_info(notice.request, run, self.agents)))
        elif isinstance(notice, AutoApproved):
            standing = notice.standing
            message = grants.auto_approved(
                notice.request.tool_name, standing.granted_by, standing.expires_at
            )
            await self._post(run, message)
        return None

    async def _show_standing(self, standing: GrantRecord, run: RunRecord | None) -> str | None:
        """A standing approval's line: posted once, then updated in place (revoked)."""
        message = grants.grant_message(
            standing.id,
            standing.tool_name,
            standing.granted_by,
            standing.expires_at,
            standing.revoked_by,
        )
        if standing.message_ts:
            await self.client.chat_update(
                channel=standing.channel_id, ts=standing.message_ts, **message
            )
            return standing.message_ts
        return await self._post(run, message) if run is not None else None

    # -- how each is shown ------------------------------------------------------------------

    async def _post_card(
        self, run: RunRecord, request: ApprovalRequestRecord, channel: str | None
    ) -> str | None:
        card = card_info(request, run, self.agents)
        if channel == run.channel_id or channel is None:
            return await self._post(run, cards.request_card(card))
        resp = await self.client.chat_postMessage(channel=channel, **cards.request_card(card))
        ts = str(resp["ts"])
        try:
            link = await self.client.chat_getPermalink(channel=channel, message_ts=ts)
            permalink: str | None = str(link["permalink"])
        except SlackApiError:
            permalink = None
        await self._post(run, messages.card_elsewhere(card, channel, permalink))
        return ts

    async def update_card(self, run: RunRecord, request: ApprovalRequestRecord) -> None:
        self._share_connections()
        if not (request.channel_id and request.message_ts):
            return
        message = cards.request_card(card_info(request, run, self.agents))
        await self.client.chat_update(channel=request.channel_id, ts=request.message_ts, **message)

    async def show_activity(self, run: RunRecord) -> None:
        """The run's live status (one message, updated in place, rate-limited)."""
        self._share_connections()
        if run.status in ("waiting_for_human", "cancelled"):
            self._streams.pop(run.id, None)  # its text so far stays as it is
        self.live.show(run)

    def text_sink(self, run: RunRecord) -> AnswerStream | None:
        """Stream the run's text into its thread (a person asked: Slack streams to them)."""
        self._share_connections()
        if not (run.channel_id and run.thread_ts and run.requester and run.team_id):
            return None
        self._streams[run.id] = AnswerStream(self.client, run)
        return self._streams[run.id]

    async def post_answer(self, run: RunRecord, text: str, truncated: bool = False) -> None:
        posted = messages.final_answer(text, run_info(run), truncated=truncated)
        stream = self._streams.pop(run.id, None)
        if stream is not None and stream.final_ts and run.channel_id:
            try:  # the streamed answer becomes the formatted one: shown once
                await self.client.chat_update(
                    channel=run.channel_id, ts=stream.final_ts, **posted[0]
                )
                posted = posted[1:]
            except SlackApiError as exc:
                log.warning("event=stream_replace_failed run_id=%s error=%s", run.id, exc)
        for message in posted:
            await self._post(run, message)

    async def post_failure(self, run: RunRecord, error: str) -> None:
        self._streams.pop(run.id, None)
        await self._post(run, messages.run_failed(run_info(run, error), error))

    async def refresh_home(self, user_id: str) -> None:
        self._share_connections()
        if self.homes is not None:
            await self.homes.refresh(user_id)
