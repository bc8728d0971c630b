"""The approval request an interaction names, in its Bolt context, read once.

`ProvideRequest` (global Bolt middleware, after `ProvideService`) looks at a payload: a click
on a button whose value is a request's id (Approve, Approve always, Edit, Reject, Answer,
Review, View full arguments) or the submission of a form whose private_metadata is one. It
puts a `RequestAtHand` in the context (`request_at_hand(context)`) and reads nothing: Bolt
runs every middleware before it answers Slack, and a click is acked before any database
read. The listener (or the step every click on a request takes first,
bot/slack/listeners/clicks.py) loads it after the ack, through the facade, once; whatever
else needs it in that interaction (the check of another card's button, the decision's own
check) uses that read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from slack_bolt.async_app import AsyncBoltContext
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.service import Service
from bot.slack.ids import SUBMIT_DECISION, ActionId, CallbackId
from bot.slack.listeners.common import service_of
from store import ApprovalRequestRecord, RunRecord

REQUEST_KEY: Final = "sayso_request"
"""Where `ProvideRequest` puts the `RequestAtHand` in a request's Bolt context."""

REQUEST_ACTIONS: Final = frozenset(
    {
        ActionId.APPROVE,
        ActionId.APPROVE_ALWAYS,
        ActionId.EDIT,
        ActionId.REJECT,
        ActionId.ANSWER,
        ActionId.REVIEW,
        ActionId.VIEW_ARGS,
    }
)
"""Buttons whose value is an approval request's id (on cards and on App Home)."""

REQUEST_VIEWS: Final[frozenset[CallbackId]] = frozenset(SUBMIT_DECISION)
"""Forms whose private_metadata is an approval request's id (and only that)."""


def named_request(body: dict[str, Any]) -> str | None:
    """The id of the approval request this payload names ("" when it names none although it
    should: nothing by that id), or None for a payload that is not about one."""
    kind = body.get("type")
    if kind == "block_actions":
        action = (body.get("actions") or [{}])[0]
        if action.get("action_id") in REQUEST_ACTIONS:
            return str(action.get("value") or "")
    elif kind == "view_submission":
        view = body.get("view") or {}
        if view.get("callback_id") in REQUEST_VIEWS:
            return str(view.get("private_metadata") or "").strip()
    return None


class RequestAtHand:
    """The approval request one interaction names, read through the facade on first use."""

    def __init__(self, service: Service, request_id: str) -> None:
        self.service = service
        self.request_id = request_id
        self._loaded = False
        self._request: ApprovalRequestRecord | None = None
        self._run: RunRecord | None = None

    async def load(self) -> ApprovalRequestRecord | None:
        """The request (None: no request by that id), read once."""
        if not self._loaded:
            found = await self.service.approval_request_and_run(self.request_id)
            self._request, self._run = found
            self._loaded = True
        return self._request

    @property
    def request(self) -> ApprovalRequestRecord | None:
        """The request as `load` read it (None before it is loaded)."""
        return self._request

    @property
    def run(self) -> RunRecord | None:
        """The request's run, read with it by `load` (None before, or when it is gone)."""
        return self._run

    async def with_run(self) -> tuple[ApprovalRequestRecord, RunRecord] | None:
        """The request and its run, or None when either no longer exists (read once)."""
        request = await self.load()
        return (request, self._run) if request is not None and self._run is not None else None


def request_at_hand(context: AsyncBoltContext) -> RequestAtHand:
    """The request this interaction names, as `ProvideRequest` put it in the context."""
    hand = context.get(REQUEST_KEY)
    if not isinstance(hand, RequestAtHand):
        raise RuntimeError("no request in the Bolt context: build the app with build_bot()")
    return hand


class ProvideRequest(AsyncMiddleware):
    """Bolt middleware: a payload naming an approval request gets a `RequestAtHand` in its
    context (nothing is read here, before the ack)."""

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        body = req.body if isinstance(req.body, dict) else {}
        request_id = named_request(body)
        if request_id is not None:
            req.context[REQUEST_KEY] = RequestAtHand(service_of(req.context), request_id)
        return await next()
