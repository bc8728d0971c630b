"""Shows runs in Slack: the root message, its thread, cards, ephemerals and App Home.

Every write is an outbox row (bot/slack/writes.py), sent by the dispatcher: nothing here
awaits Slack, except the run's first message (`open_thread`: its ts is the run's thread, and
a channel Slack refuses must stop the run before it starts). Its row is registered around the
direct post, so its later states (the status checklist folded in) are outbox updates.
"""

from __future__ import annotations

import logging
import uuid
from collections import OrderedDict
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypedDict

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent.schema_tool import API_AGENT_PREFIX
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
from bot.slack.blocks import cards, messages
from bot.slack.blocks import standing as standing_blocks
from bot.slack.blocks.status import status_message
from bot.slack.channels import ChannelCheck
from bot.slack.home_refresh import HomeRefresher, home_builder
from bot.slack.render import card_info, run_info, run_steps
from bot.slack.root_message import HeldRoots, root_with_checklist
from bot.slack.streaming import AnswerStream
from bot.slack.writes import Writes, tag
from store import ApprovalRequestRecord, RunRecord, StandingApproval
from store.outbox import Outbox

if TYPE_CHECKING:
    from bot.service import Service

log = logging.getLogger("sayso.slack")

STATUS_DEBOUNCE = 1.0  # seconds: status changes within it are one chat.update
REMEMBERED = 2000  # root messages whose last state is remembered (no identical re-put)


class SlackPresenter:
    def __init__(self, client: AsyncWebClient, agents: AgentRegistry, outbox: Outbox) -> None:
        self.client = client
        self.agents = agents
        self.outbox = outbox
        self.writes = Writes(outbox)
        self.homes: HomeRefresher | None = None
        self.channels = ChannelCheck(client)
        self._streams: dict[str, AnswerStream] = {}
        self._shown: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._session: aiohttp.ClientSession | None = None
        self.held_roots = HeldRoots(self.writes.while_running, STATUS_DEBOUNCE)

    def attach(self, service: Service) -> None:
        """App Home shows the service's inbox: refreshed (coalesced) after the changes that
        concern a person who opened it, a reaction here in Slack, never a call back from the
        service."""

        async def publish(user_id: str, view: dict[str, Any]) -> None:
            await self.writes.home(service.workspace_team_id or "-", user_id, view)

        async def opened(user_id: str) -> bool:
            key = f"home:{service.workspace_team_id or '-'}:{user_id}"
            return await self.writes.exists(key)

        self.homes = HomeRefresher(home_builder(service, self.agents), publish, opened)

    def _share_connections(self) -> None:
        """Give the Web API client one HTTP session (on this event loop)."""
        current = self.client.session
        if current is None or current.closed:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.client.timeout)
            )
            self.client.session = self._session

    async def close(self) -> None:
        await self.held_roots.close()
        if self.homes is not None:
            await self.homes.close()
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _post(self, run: RunRecord, key: str, message: dict[str, Any]) -> None:
        """A message in the run's thread (a row: `key` makes it once)."""
        if not run.channel_id:
            return
        await self.writes.message(key, run.channel_id, message, **_thread(run))

    # -- the presentation port (bot/service/ports.py) ----------------------------------------

    async def open_thread(self, run: RunRecord, *, queued_ahead: int = 0) -> str:
        """The message that starts the run's thread, posted now (its ts becomes the thread's;
        Slack's refusal stops the run). Its row is held while the post is in flight and marked
        as maybe posted, so a crash meanwhile ends in a lookup, never in a second root."""
        self._share_connections()
        if not run.channel_id:
            raise ValueError(f"run {run.id} has no channel to post its first message in")
        key = f"root:{run.id}"
        message = messages.root_message(replace(run_info(run), queued_ahead=queued_ahead))
        version = await self.writes.hold(key, run.channel_id, message)
        try:
            resp = await self.client.chat_postMessage(
                channel=run.channel_id, metadata=tag(key, version), **message
            )
        except Exception:
            await self.outbox.drop(key, "refused")
            raise
        ts = str(resp["ts"])
        await self.writes.posted(key, version, ts)
        self._remember(key, message)
        return ts

    def _remember(self, key: str, message: dict[str, Any]) -> bool:
        """False when `message` is what this process last put for `key`."""
        if self._shown.get(key) == message:
            return False
        self._shown[key] = message
        self._shown.move_to_end(key)
        while len(self._shown) > REMEMBERED:
            self._shown.popitem(last=False)
        return True

    async def update_root(self, run: RunRecord) -> None:
        """The run's root message shows its status and live checklist: a running run's states
        are held here for the debounce (changes within a second are one update, the newest
        wins; bot/slack/root_message.py), the others are put at once."""
        if not (run.channel_id and run.thread_ts and run.requester is not None):
            return
        key = f"root:{run.id}"
        message = root_with_checklist(run)
        if not self._remember(key, message):
            return
        if run.status == "running":
            self.held_roots.later(key, run.channel_id, message, run.id)
            return
        await self.held_roots.drop(key)  # a state that lasts: put now (nothing to fold in)
        await self.writes.message(key, run.channel_id, message)

    async def _show_checklist(self, run: RunRecord) -> None:
        """A follow-up run has no root of its own: its checklist is a message in the thread."""
        if not (run.channel_id and run.thread_ts) or not run_steps(run.result):
            return
        key = f"status:{run.id}"
        message = status_message(run.id, run_steps(run.result))
        if self._remember(key, message):
            await self.writes.message(
                key, run.channel_id, message, thread_ts=run.thread_ts, delay=STATUS_DEBOUNCE
            )

    def card_channel(self, run: RunRecord, request: ApprovalRequestRecord) -> str | None:
        """The run's thread, or the agent's channel when the run is in the requester's side
        pane (a DM) and the card needs someone else, who could not see it there."""
        agent = self.agents.get(run.agent_id)
        in_pane = bool(run.channel_id and run.channel_id.startswith("D"))
        if not (in_pane and agent is not None and agent.channel):
            return run.channel_id
        tool = self.agents.tool(run.agent_id, request.spec.tool_name)
        approvers = [a for a in request.policy.approvers if a != "*"]
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
            await self.post_answer(run, change)
        elif isinstance(change, Failed):
            await self.post_failure(run, change)
        elif isinstance(change, Cancelled):
            self._streams.pop(run.id, None)
            await self._post(run, f"cancelled:{run.id}", messages.run_cancelled(change.by))

    async def post_card(self, run: RunRecord, request: ApprovalRequestRecord) -> CardPlace | None:
        """Put the request's card (once: a card row already in the outbox is the card). Its
        ts comes later, through the dispatcher's `on_posted` (bot/slack/posted.py)."""
        key = f"card:{request.id}"
        channel = self.card_channel(run, request)
        if channel is None:
            return None
        card = card_info(request, run, self.agents)
        message = cards.request_card(card)
        if channel == run.channel_id:
            await self.writes.message(key, channel, message, **_thread(run), only="new")
            return None
        if not await self.writes.message(key, channel, message, only="new"):
            return None  # put before: the link was put with it
        link = messages.card_elsewhere(card, channel, None)
        await self._post(run, f"elsewhere:{request.id}", link)
        return None

    async def card_posted_elsewhere(
        self, run: RunRecord, request: ApprovalRequestRecord, channel: str, ts: str
    ) -> None:
        """The card is up in another channel: the run's line about it links to it now."""
        try:
            answer = await self.client.chat_getPermalink(channel=channel, message_ts=ts)
        except Exception as exc:  # the line without its link is still true
            log.info("event=card_permalink_failed request_id=%s error=%r", request.id, exc)
            return
        link = messages.card_elsewhere(
            card_info(request, run, self.agents), channel, str(answer.get("permalink") or "")
        )
        await self.writes.message(
            f"elsewhere:{request.id}", run.channel_id, link, **_thread(run), only="existing"
        )

    async def request_changed(self, run: RunRecord, request: ApprovalRequestRecord) -> None:
        """The card shows the request as it is now; the App Home of whoever just acted on it
        follows (coalesced, if they opened it)."""
        await self.update_card(run, request)
        for user in {request.state.decided_by, *request.state.approvals[-1:]}:
            if user and user[:1] in ("U", "W"):
                await self.refresh_home(user)

    async def channel_refusal(self, channel_id: str) -> str | None:
        return await self.channels.refusal(channel_id)

    async def say(self, notice: Notice, run: RunRecord | None = None) -> str | None:
        if isinstance(notice, StandingApprovalShown):
            await self._show_standing(notice.standing, run)
            return None
        if run is None:
            return None
        if isinstance(notice, ToolFailed):
            text = f":warning: `{notice.tool}` failed: {notice.detail}"
            await self._post(run, f"notice:{run.id}:{_unique()}", messages.progress(text))
        elif isinstance(notice, Reminder):
            card = card_info(notice.request, run, self.agents)
            message = messages.reminder(card, list(card.approvers))
            await self._post(run, f"reminder:{notice.request.id}", message)
        elif isinstance(notice, Escalated):
            message = messages.escalation(card_info(notice.request, run, self.agents))
            await self._post(run, f"escalated:{notice.request.id}:{_unique()}", message)
        elif isinstance(notice, AutoApproved):
            standing = notice.standing
            message = standing_blocks.auto_approved(
                notice.request.spec.tool_name, standing.granted_by, standing.expires_at
            )
            await self._post(run, f"auto:{notice.request.id}", message)
        return None

    async def _show_standing(self, standing: StandingApproval, run: RunRecord | None) -> None:
        """A standing approval's line: posted once, then updated in place (revoked)."""
        message = standing_blocks.standing_message(
            standing.id,
            standing.tool_name,
            standing.granted_by,
            standing.expires_at,
            standing.revoked_by,
        )
        key = f"standing:{standing.id}"
        if standing.message_ts and standing.channel_id:
            await self.writes.known(key, standing.channel_id, standing.message_ts, message)
            await self.writes.message(key, standing.channel_id, message)
        elif await self.writes.exists(key):
            await self.writes.message(key, standing.channel_id, message)
        elif run is not None:
            await self._post(run, key, message)

    # -- how each is shown ------------------------------------------------------------------

    async def update_card(self, run: RunRecord, request: ApprovalRequestRecord) -> None:
        key = f"card:{request.id}"
        message = cards.request_card(card_info(request, run, self.agents))
        if await self.writes.message(key, request.state.channel_id, message, only="existing"):
            return
        if (
            request.state.channel_id and request.state.message_ts
        ):  # posted before the outbox: its row
            await self.writes.known(
                key, request.state.channel_id, request.state.message_ts, message
            )
            await self.writes.message(key, request.state.channel_id, message)
        # else no card to update (the request was never shown)

    async def show_activity(self, run: RunRecord) -> None:
        """The run's live checklist, folded into its root message (debounced)."""
        if run.status in ("waiting_for_human", "cancelled"):
            self._streams.pop(run.id, None)  # its text so far stays as it is
        result = run.result
        if result is not None and result.run.context.get("follow_up"):
            await self._show_checklist(run)
        else:
            await self.update_root(run)

    def text_sink(self, run: RunRecord) -> AnswerStream | None:
        """Stream the run's text into its thread (a person asked: Slack streams to them)."""
        if not (run.channel_id and run.thread_ts and run.requester and run.team_id):
            return None
        self._streams[run.id] = AnswerStream(self.outbox, run)
        return self._streams[run.id]

    async def post_answer(self, run: RunRecord, answer: Answered) -> None:
        """The formatted answer: the open stream stops with its first message's blocks, or
        it is posted; a long answer's other messages follow it in order. Shown `again` (after
        a crash), only the messages never put are put."""
        posted = messages.final_answer(answer.text, run_info(run), truncated=answer.truncated)
        stream = self._streams.pop(run.id, None)
        if not run.channel_id:
            return
        only = "new" if answer.again else None
        if answer.again:
            previous = await self._answer_again(run, posted[0])
        elif stream is not None and stream.open:
            previous = await stream.finish(posted[0])
        else:
            previous = f"answer:{run.id}:final"
            await self.writes.message(previous, run.channel_id, posted[0], **_thread(run))
        for n, message in enumerate(posted[1:], start=1):
            key = f"{previous.split('+')[0]}+{n}"
            await self.writes.message(
                key, run.channel_id, message, after=previous, only=only, **_thread(run)
            )
            previous = key

    async def _answer_again(self, run: RunRecord, first: dict[str, Any]) -> str:
        """The key of the answer's first message after a crash: the one put before, else the
        stream left open (stopped now with the answer's blocks), else a new post."""
        rows = [r for r in await self.outbox.with_prefix(f"answer:{run.id}:") if "+" not in r.key]
        for row in rows:
            streamed_answer = row.payload.get("final") and not row.payload.get("as_streamed")
            if row.key.endswith(":final") or (row.kind == "stream" and streamed_answer):
                return row.key
        open_streams = [r for r in rows if r.kind == "stream" and not r.payload.get("final")]
        if open_streams:
            row = max(open_streams, key=lambda r: r.created_at)
            payload = {**row.payload, **first, "final": True}
            await self.outbox.put(
                row.key,
                kind="stream",
                channel=row.channel,
                thread_ts=row.thread_ts,
                payload=payload,
            )
            return row.key
        key = f"answer:{run.id}:final"
        await self.writes.message(key, run.channel_id, first, only="new", **_thread(run))
        return key

    async def post_failure(self, run: RunRecord, failed: Failed) -> None:
        """The failure, once per saved failure (its version: a retried run fails anew)."""
        self._streams.pop(run.id, None)
        if not run.channel_id:
            return
        message = messages.run_failed(run_info(run, failed.error), failed.error)
        await self.writes.message(
            f"failure:{run.id}:{run.version}",
            run.channel_id,
            message,
            only="new" if failed.again else None,
            **_thread(run),
        )

    async def refresh_home(self, user_id: str) -> None:
        if self.homes is not None:
            await self.homes.changed(user_id)


class _Thread(TypedDict, total=False):
    thread_ts: str | None
    thread_key: str | None


def _thread(run: RunRecord) -> _Thread:
    """Where the run's messages go: its thread, or (a record read before its root message's
    ts was saved) after its root row, whose ts the outbox fills in. An API request's run has no
    root row: its card is the thread."""
    if run.thread_ts or run.agent_id.startswith(API_AGENT_PREFIX):
        return _Thread(thread_ts=run.thread_ts)
    return _Thread(thread_key=f"root:{run.id}")


def _unique() -> str:
    return uuid.uuid4().hex[:12]
