"""Submitting and closing modals, and honouring the bot's response_action."""

from __future__ import annotations

import copy
import logging
from typing import Any

from bot.sandbox import payloads
from bot.sandbox.blockkit import check_view
from bot.sandbox.core import SandboxCore
from bot.sandbox.delivery import Delivery
from bot.sandbox.messages import fill_ids
from bot.sandbox.state import OpenView
from bot.sandbox.views import input_elements, push_view, replace_view, state_values

log = logging.getLogger("sayso.sandbox")

TROUBLE = "We had some trouble connecting. Try again?"


class ViewFlow(SandboxCore):
    def _view_for(self, user: str, view_id: str) -> OpenView:
        stored = self.ws.views.get(view_id)
        mine = view_id in self.ws.stacks.get(user, []) or self.ws.homes.get(user) == view_id
        if stored is None or stored.closed or not mine:
            open_ids = self.ws.stacks.get(user, [])
            raise LookupError(f"view {view_id!r} is not open for {user} (open: {open_ids})")
        return stored

    def _view_with_state(self, stored: OpenView, values: dict[str, Any]) -> dict[str, Any]:
        view = copy.deepcopy(stored.view)
        state, _ = state_values(view, values)
        view["state"] = {"values": state}
        return view

    async def submit_view(
        self, user: str, view_id: str, values: dict[str, Any] | None = None
    ) -> Delivery:
        """Press the modal's submit button with `values` {block_id: str | list[str] | None}.

        Inputs left out keep their initial value. Like Slack's client, an empty required input
        or a too-long text is refused before anything is sent: the Delivery then has
        status 0, error "client_validation", and `view_errors(view_id)` says why.
        """
        stored = self._view_for(user, view_id)
        stack = self.ws.stacks.get(user, [])
        if not stack or stack[-1] != view_id:
            raise LookupError(f"view {view_id!r} is not the top modal for {user} ({stack})")
        view = copy.deepcopy(stored.view)
        state, client_errors = state_values(view, values or {})
        stored.errors = {}
        if client_errors:
            stored.errors = client_errors
            self.changed()
            log.info("event=submission_refused_by_client view_id=%s", view_id)
            return self.record_delivery(
                Delivery("view_submission", 0, client_errors, 0.0, error="client_validation")
            )
        view["state"] = {"values": state}
        stored.view["state"] = view["state"]
        trigger_id = self.issue_trigger(user)
        payload = payloads.view_submission(self.person(user), view, trigger_id)
        delivery = await self.send_payload("view_submission", payload)
        delivery.trigger_id = trigger_id
        delivery.view_id = view_id
        if delivery.ok:
            self._apply_response_action(user, stored, delivery)
        else:
            stored.errors = {"": TROUBLE}
            delivery.error = delivery.error or TROUBLE
        return self.record_delivery(delivery)

    def _apply_response_action(self, user: str, stored: OpenView, delivery: Delivery) -> None:
        body = delivery.body if isinstance(delivery.body, dict) else {}
        action = body.get("response_action")
        view_id = stored.view["id"]
        if action == "errors":
            errors = body.get("errors") or {}
            inputs = input_elements(stored.view)
            unknown = [k for k in errors if k not in inputs]
            if unknown or not isinstance(errors, dict):
                delivery.error = f"response_action errors names non-input blocks: {unknown}"
                log.warning("event=bad_response_action view_id=%s error=%s", view_id, unknown)
                stored.errors = {"": TROUBLE}
                return
            stored.errors = {str(k): str(v) for k, v in errors.items()}
        elif action in ("update", "push"):
            spec = body.get("view")
            problems = check_view(spec)
            if problems or (isinstance(spec, dict) and spec.get("type") != "modal"):
                delivery.error = f"response_action {action} with invalid view: {problems}"
                log.warning("event=bad_response_action view_id=%s action=%s", view_id, action)
                stored.errors = {"": TROUBLE}
                return
            assert isinstance(spec, dict)
            spec = {**spec, "blocks": fill_ids(spec.get("blocks"))}
            if action == "update":
                replace_view(stored, spec)
            else:
                pushed = push_view(self.ws, user, spec)
                delivery.view_id = pushed.view["id"]
        elif action == "clear":
            self.ws.close_views(user, list(self.ws.stacks.get(user, [])))
        else:
            self.ws.close_views(user, [view_id])

    async def close_view(self, user: str, view_id: str) -> Delivery | None:
        """Press the modal's close button; view_closed is sent only if notify_on_close."""
        stored = self._view_for(user, view_id)
        clear = bool(stored.view.get("clear_on_close"))
        closing = list(self.ws.stacks.get(user, [])) if clear else [view_id]
        self.ws.close_views(user, closing)
        self.changed()
        if not stored.view.get("notify_on_close"):
            return None
        payload = payloads.view_closed(self.person(user), copy.deepcopy(stored.view), clear)
        delivery = await self.send_payload("view_closed", payload)
        delivery.view_id = view_id
        return self.record_delivery(delivery)
