"""What a person does in the sandbox, delivered to the bot as Slack delivers it.

Each method sends one signed request (two for a message that mentions the bot), waits for the
bot's ack, applies its effects as Slack would, and returns the `Delivery`.
"""

from __future__ import annotations

import copy
import logging
import uuid
from typing import Any

from bot.sandbox import payloads
from bot.sandbox.core import ResponseUrl, SandboxCore
from bot.sandbox.delivery import Delivery
from bot.sandbox.finder import find_element
from bot.sandbox.messages import ApiError
from bot.sandbox.responses import apply_response
from bot.sandbox.state import BOT_USER_ID, GENERAL, OpenView
from bot.sandbox.viewflow import ViewFlow

log = logging.getLogger("sayso.sandbox")


class PersonActions(ViewFlow, SandboxCore):
    """Slash commands, messages, clicks and App Home; modal actions live in ViewFlow."""

    async def slash_command(
        self, user: str, text: str, channel: str = GENERAL, command: str = "/sayso"
    ) -> Delivery:
        """Run `command text` as `user`; an ack body is shown as Slack shows it."""
        person = self.person(user)
        info = self.ws.ensure_channel(channel)
        trigger_id = self.issue_trigger(user)
        target = ResponseUrl(channel=channel, user=user)
        response_url = self.issue_response_url(target)
        fields = payloads.slash_command(person, info, command, text, response_url, trigger_id)
        delivery = await self.send_form("slash_command", fields)
        delivery.trigger_id = trigger_id
        if not delivery.ok:
            problem = _slash_error(delivery)
            delivery.error = delivery.error or problem
            notice = {"text": f'{command} failed with the error "{problem}"'}
            self.ws.add_ephemeral(channel, user, {"user": "USLACKBOT", **notice})
        elif isinstance(delivery.body, dict) and delivery.body:
            answer = {"response_type": "ephemeral", **delivery.body}
            self._apply_ack_message(target, answer, delivery)
        elif isinstance(delivery.body, str) and delivery.body.strip():
            self._apply_ack_message(target, {"text": delivery.body}, delivery)
        return self.record_delivery(delivery)

    def _apply_ack_message(
        self, target: ResponseUrl, answer: dict[str, Any], delivery: Delivery
    ) -> None:
        try:
            apply_response(self, target, answer)
        except ApiError as exc:
            delivery.error = f"ack body refused: {exc.code} {exc.extra or ''}".strip()
            log.warning("event=ack_body_refused kind=slash_command error=%s", exc.code)

    async def post_message(
        self, user: str, text: str, channel: str = GENERAL, thread_ts: str | None = None
    ) -> Delivery:
        """Post as `user`; delivers `app_mention` (when the bot is mentioned) and `message`.

        Returns the app_mention delivery when there is one, else the message delivery; both
        are in `sandbox.deliveries`. `Delivery.ts` is the new message's ts.
        """
        person = self.person(user)
        self.ws.ensure_channel(channel)
        stored: dict[str, Any] = {
            "user": user,
            "text": text,
            "blocks": payloads.rich_text(text),
            "client_msg_id": str(uuid.uuid4()),
            "user_team": person.team_id,
        }
        if thread_ts:
            stored["thread_ts"] = thread_ts
        try:
            message = self.ws.add_message(channel, stored)
        except LookupError:
            raise LookupError(f"no message {thread_ts} in {channel} to reply to") from None
        self.changed()
        common = {
            "user": user,
            "text": text,
            "ts": message["ts"],
            "channel": channel,
            "event_ts": message["ts"],
            "team": person.team_id,
            "blocks": message["blocks"],
            "client_msg_id": message["client_msg_id"],
        }
        if message.get("thread_ts"):
            common["thread_ts"] = message["thread_ts"]
            common["parent_user_id"] = message.get("parent_user_id")
        first: Delivery | None = None
        if f"<@{BOT_USER_ID}>" in text:
            first = await self.send_event({"type": "app_mention", **common})
        channel_type = "im" if channel.startswith("D") else "channel"
        second = await self.send_event({"type": "message", **common, "channel_type": channel_type})
        for delivery in (first, second):
            if delivery is not None:
                delivery.ts = message["ts"]
        return first or second

    async def open_assistant(self, user: str, channel: str = GENERAL) -> Delivery:
        """The person opens sayso in the AI side pane (while viewing `channel`): a new thread
        in their DM with the app, and `assistant_thread_started`. `Delivery.ts` is the thread."""
        person = self.person(user)
        dm = "D" + user[1:]
        self.ws.ensure_channel(dm)
        root = self.ws.add_message(
            dm, {"user": user, "text": "", "subtype": "assistant_app_thread"}
        )
        self.ws.assistant_threads[(dm, root["ts"])] = {"user": user, "status": "", "prompts": []}
        self.changed()
        event: dict[str, Any] = {
            "type": "assistant_thread_started",
            "assistant_thread": {
                "user_id": user,
                "context": {"channel_id": channel, "team_id": person.team_id},
                "channel_id": dm,
                "thread_ts": root["ts"],
            },
            "event_ts": self.ws.clock.next(),
        }
        delivery = await self.send_event(event)
        delivery.ts = root["ts"]
        return delivery

    def assistant_thread(self, user: str, thread_ts: str) -> dict[str, Any]:
        """The pane's state of a thread: status, suggested prompts, title."""
        return copy.deepcopy(self.ws.assistant_threads[("D" + user[1:], thread_ts)])

    async def open_home(self, user: str) -> Delivery:
        """The person opens the bot's App Home tab: app_home_opened (tab "home")."""
        self.person(user)
        event: dict[str, Any] = {
            "type": "app_home_opened",
            "user": user,
            "channel": "D" + user[1:],
            "tab": "home",
            "event_ts": f"{self.ws.clock.next()}",
        }
        home_id = self.ws.homes.get(user)
        if home_id:
            event["view"] = copy.deepcopy(self.ws.views[home_id].view)
        return await self.send_event(event)

    async def click(
        self,
        user: str,
        channel: str,
        message_ts: str,
        action_id: str,
        *,
        value: str | None = None,
        block_id: str | None = None,
    ) -> Delivery:
        """Click a button (or pick `value` in a select) in a message or an ephemeral message."""
        payload = self.click_payload(
            user, channel, message_ts, action_id, value=value, block_id=block_id
        )
        delivery = await self.send_payload("block_actions", payload)
        delivery.trigger_id = payload["trigger_id"]
        return self.record_delivery(delivery)

    def click_payload(
        self,
        user: str,
        channel: str,
        message_ts: str,
        action_id: str,
        *,
        value: str | None = None,
        block_id: str | None = None,
    ) -> dict[str, Any]:
        """The block_actions payload Slack sends for that click (with a fresh trigger_id and
        response_url), without sending it: for tests that deliver it themselves."""
        person = self.person(user)
        message = self.ws.find(channel, message_ts)
        is_ephemeral = False
        if message is None:
            eph = self.ws.find_ephemeral(user, message_ts)
            if eph is None or eph.channel != channel:
                raise LookupError(
                    f"no message {message_ts} in {channel} visible to {user} "
                    f"(messages: {[m['ts'] for m in self.ws.top_level(channel)]})"
                )
            message, is_ephemeral = eph.message, True
        found = find_element(message.get("blocks") or [], action_id, block_id, value)
        container: dict[str, Any] = {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": channel,
            "is_ephemeral": is_ephemeral,
        }
        thread_ts = message.get("thread_ts")
        if thread_ts:
            container["thread_ts"] = thread_ts
        target = ResponseUrl(channel, user, message_ts, is_ephemeral, thread_ts)
        return payloads.block_actions(
            person,
            [payloads.action(found.element, found.block_id, found.selected)],
            self.issue_trigger(user),
            container=container,
            channel=self.ws.channels[channel],
            message=None if is_ephemeral else copy.deepcopy(message),
            response_url=self.issue_response_url(target),
        )

    async def click_in_view(
        self,
        user: str,
        view_id: str,
        action_id: str,
        *,
        value: str | None = None,
        block_id: str | None = None,
        values: dict[str, Any] | None = None,
    ) -> Delivery:
        """Click in an open modal (or the home view); `values` fills the view's inputs state."""
        stored = self._view_for(user, view_id)
        return await self._click_view(user, stored, action_id, value, block_id, values)

    async def click_home(
        self,
        user: str,
        action_id: str,
        *,
        value: str | None = None,
        block_id: str | None = None,
    ) -> Delivery:
        """Click in the person's App Home view."""
        home_id = self.ws.homes.get(user)
        if home_id is None:
            raise LookupError(f"{user} has no App Home view (views.publish was not called)")
        return await self._click_view(user, self.ws.views[home_id], action_id, value, block_id)

    async def _click_view(
        self,
        user: str,
        stored: OpenView,
        action_id: str,
        value: str | None,
        block_id: str | None,
        values: dict[str, Any] | None = None,
    ) -> Delivery:
        person = self.person(user)
        found = find_element(stored.view.get("blocks") or [], action_id, block_id, value)
        view = self._view_with_state(stored, values or {})
        trigger_id = self.issue_trigger(user)
        payload = payloads.block_actions(
            person,
            [payloads.action(found.element, found.block_id, found.selected)],
            trigger_id,
            container={"type": "view", "view_id": view["id"]},
            view=view,
            state=view["state"],
        )
        delivery = await self.send_payload("block_actions", payload)
        delivery.trigger_id = trigger_id
        delivery.view_id = view["id"]
        return self.record_delivery(delivery)


def _slash_error(delivery: Delivery) -> str:
    if delivery.timed_out and delivery.status:
        return "operation_timeout"
    if delivery.status == 0:
        return "dispatch_failed"
    return "http_service_error" if delivery.status >= 500 else "http_client_error"
