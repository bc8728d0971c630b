"""Approval requests made over the HTTP API: create, read, wait for, cancel.

They go through the same decide path as a sayso agent's requests (bot/service/decide.py):
only their continuation differs, and it is the caller's, never sayso's. Each one lives on a run
of its own (agent_id `api:<key name>`, waiting for a human, no saved state) so cards, threads,
App Home, expiry and reminders work unchanged; no worker ever drives such a run.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from bot.agent.schema_tool import API_AGENT_PREFIX, schema_errors_off_loop
from bot.agent.util import wait_set
from bot.service.decide import Decider
from bot.service.events import Events, RequestSettled
from bot.service.notifier import RequestNotifier
from bot.service.policy.api import Asked, PolicyRefusal, narrowed, operator_policy
from bot.service.policy.effective import Policies
from bot.service.policy.rules import EffectivePolicy
from bot.service.presenting import SafePresenter
from store import ApprovalRequestRecord, RunRecord, Store
from store.api import ApiKey, ApiRequestLink, IdempotencyConflict, NewApiRequest, StoredApiRequest

log = logging.getLogger("sayso.api")

SAFETY_RECHECK = 5.0
"""A long-poll re-reads the request this often, should a notification ever be lost."""

Settled = Callable[[ApprovalRequestRecord], Awaitable[None]]


class ApiRefusal(Exception):
    """Input the API refuses: `code` (unauthorized, forbidden, not_found, invalid, or Slack's
    error code when Slack refused the card), a message naming the field."""

    def __init__(self, code: str, message: str, *, slack: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.slack = slack


@dataclass(frozen=True)
class Created:
    request: ApprovalRequestRecord
    created: bool


def new_key_secrets() -> tuple[str, str]:
    """A key token and a webhook secret, random, shown once."""
    return "sk_sayso_" + secrets.token_urlsafe(32), "whsec_" + secrets.token_urlsafe(32)


class ApiRequests:
    def __init__(
        self,
        store: Store,
        show: SafePresenter,
        decider: Decider,
        events: Events,
        policies: Policies,
        *,
        default_channel: str | None,
        callback_hosts: tuple[str, ...] = (),
    ) -> None:
        self.store = store
        self.show = show
        self.decider = decider
        self.events = events
        self.policies = policies
        self.default_channel = default_channel
        self.approval_ttl = policies.approval_ttl
        self.callback_hosts = callback_hosts
        self.notifier = RequestNotifier()
        self._listener = store.api.settled_listener(self.notifier.wake, self.notifier.wake_all)
        events.subscribe(RequestSettled, self._on_settled)

    def subscribe_settled(self, handler: Settled) -> None:
        """`handler` is told of every API request settled here (after its callers are woken):
        webhooks, a front's long-polls woken by its embedded worker."""

        async def api_only(event: RequestSettled) -> None:
            if event.request.spec.api_spec is not None:
                await handler(event.request)

        self.events.subscribe(RequestSettled, api_only)

    async def start(self) -> None:
        self._listener.start()  # reconnects by itself; long-polls re-check meanwhile

    async def stop(self) -> None:
        await self._listener.close()

    # -- keys ----------------------------------------------------------------------------

    async def authenticate(self, token: str | None) -> ApiKey:
        key = await self.store.api.key_for_token(token) if token else None
        if key is None:
            raise ApiRefusal("unauthorized", "Missing, unknown or revoked API key.")
        return key

    async def take_quota(self, key: ApiKey, per_minute: int) -> int | None:
        """Count a request of this key (None), or the seconds until it may make one: counted
        in the database, so every replica shares the key's one quota."""
        return await self.store.api.take_quota(key.name, per_minute)

    def channel_for(self, key: ApiKey, channel: str | None) -> str:
        """Where the key's request goes: one of the key's channels; a key created without
        any may post only in SAYSO_DEFAULT_CHANNEL (deny by default: never a DM, never a
        channel the operator did not name)."""
        allowed = key.channels or ((self.default_channel,) if self.default_channel else ())
        if not allowed:
            why = (
                f"key {key.name!r} has no channels (create it with --channels, or set "
                "SAYSO_DEFAULT_CHANNEL)"
            )
            if channel is None:
                raise ApiRefusal("invalid", f"channel: required ({why})")
            raise ApiRefusal("forbidden", f"channel: {why}")
        channel = channel or allowed[0]
        if channel not in allowed:
            raise ApiRefusal("forbidden", f"channel: key {key.name!r} may not post in {channel}")
        return channel

    def policy_for(
        self, key: ApiKey, tool: str, arguments: dict[str, Any], asked: Asked
    ) -> EffectivePolicy:
        """The request's approval policy: the key's, the policy file's `api:` entry for the
        key and tool (and its first matching rule), narrowed by what the caller asked."""
        book = self.policies.policy_file
        policy, capped = operator_policy(
            key.policy,
            book.api_override(key.name, tool) if book is not None else None,
            arguments,
            default_approvers=self.policies.default_approvers,
            default_ttl=self.approval_ttl,
        )
        try:
            return narrowed(policy, capped, asked, key.name)
        except PolicyRefusal as exc:
            raise ApiRefusal("invalid", str(exc)) from None

    # -- use cases -------------------------------------------------------------------------

    async def _check_thread(self, key: ApiKey, new: NewApiRequest) -> None:
        """A key posts only into threads its own requests started: never into an agent run's
        thread (its replies are the run's) nor another key's (issue 21, finding 5)."""
        if new.thread_ts is None:
            return
        if not await self.store.api.key_owns_thread(key.name, new.channel_id, new.thread_ts):
            raise ApiRefusal(
                "forbidden",
                f"thread_ts: key {key.name!r} may post only in threads its own requests started",
            )

    async def create(self, key: ApiKey, new: NewApiRequest) -> Created:
        await self._check_thread(key, new)
        schema = new.spec.get("schema")
        if schema is not None and new.kind == "approval":
            errors = await schema_errors_off_loop(schema, new.arguments)
            if errors:
                name, message = next(iter(errors.items()))
                where = name if name == "schema" else f"arguments.{name}"
                raise ApiRefusal("invalid", f"{where}: {message}")
        refused = await self.show.channel_refusal(new.channel_id)
        if refused is not None:  # Slack would never show the card there
            log.info("event=api_card_refused key=%s error=%s", key.name, refused)
            raise ApiRefusal(refused, f"channel: Slack refuses cards there ({refused})", slack=True)
        stored = await self._create_request(new)  # audited in the same transaction
        request = stored.request
        if not stored.created:
            return Created(request, False)
        # the card is an outbox row: posted by the dispatcher (through outages and rate
        # limits); its ts becomes the request's message_ts (and the run's thread) when posted
        await self.show.inner.post_card(stored.run, request)
        log.info("event=api_request_created key=%s request_id=%s", key.name, request.id)
        return Created(request, True)

    async def answered_by_caller(
        self, key: ApiKey, new: NewApiRequest, answer: str, how: str
    ) -> ApprovalRequestRecord:
        """A question its caller's own client answered (an MCP form): stored as an ordinary
        request and answered at once by the key (`api:<key name>`, never a Slack user), with
        `how` as its reason. No card is posted; audit, App Home and webhooks see it as any
        other answered request."""
        if new.kind != "hitl":
            raise ApiRefusal("invalid", "kind: only a question can be answered by its caller")
        request_id = (await self._create_request(new)).request.id
        answered = await self.decider.answer_for_caller(
            request_id, API_AGENT_PREFIX + key.name, answer, how
        )
        if answered is None:
            raise ApiRefusal("not_found", "The request no longer exists.")
        log.info("event=api_request_answered_by_caller key=%s request_id=%s", key.name, request_id)
        return answered

    async def _create_request(self, new: NewApiRequest) -> StoredApiRequest:
        try:
            return await self.store.api.create_request(new)
        except IdempotencyConflict:
            raise ApiRefusal(
                "conflict",
                f"idempotency_key: {new.idempotency_key!r} was used for a different request "
                "(use a new key for a new request)",
            ) from None
        except LookupError:
            raise ApiRefusal("not_found", "The request no longer exists.") from None

    async def _get(self, request_id: str) -> tuple[ApprovalRequestRecord, RunRecord] | None:
        return await self.store.api.request_and_run(request_id)

    async def get(
        self, key: ApiKey, request_id: str
    ) -> tuple[ApprovalRequestRecord, ApiRequestLink]:
        """The request, if this key made it (others' requests do not exist for it)."""
        link = await self.store.api.link_of(request_id)
        found = await self._get(request_id) if link and link.key_name == key.name else None
        if found is None or link is None:
            raise ApiRefusal("not_found", f"id: no request {request_id!r} for this key")
        return found[0], link

    async def wait(
        self, key: ApiKey, request_id: str, seconds: float
    ) -> tuple[ApprovalRequestRecord, ApiRequestLink]:
        """The request once settled, or as it is after `seconds`."""
        waiter = self.notifier.waiter(request_id)
        try:
            request, link = await self.get(key, request_id)
            deadline = asyncio.get_running_loop().time() + seconds
            while request.state.status == "pending" and not request.expired_at():
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                await wait_set(waiter.event, min(left, SAFETY_RECHECK))
                # settled here: the decision itself; else (another replica, the safety
                # re-check) as the store has it
                request = waiter.take() or await self.store.requests.get(request_id) or request
            return request, link
        finally:
            self.notifier.forget(request_id, waiter)

    async def cancel(
        self, key: ApiKey, request_id: str, detail: str = "Cancelled by the caller."
    ) -> tuple[ApprovalRequestRecord, ApiRequestLink]:
        request, link = await self.get(key, request_id)
        if request.state.status == "pending":
            actor = API_AGENT_PREFIX + key.name
            if await self.store.api.cancel(request_id, actor, detail):
                request, link = await self.get(key, request_id)
                await self.events.emit(RequestSettled(request))
        return request, link

    # -- what happens once a request is settled ---------------------------------------------

    async def _on_settled(self, event: RequestSettled) -> None:
        """Every path that settles a request (decide, expiry, cancel) emits `RequestSettled`:
        an API request's waiting callers are woken and its run ends."""
        request = event.request
        if request.spec.api_spec is None:  # a sayso agent's request: its run continues it
            return
        self.notifier.wake(request.id, request)
        try:
            await self.store.api.notify_settled(request.id)
        except Exception:
            log.exception("event=notify_failed request_id=%s", request.id)
        await self.store.api.end_run(request)
        run = await self.store.runs.get(request.spec.run_id)
        if run is not None and request.state.status == "cancelled":
            await self.show.request_changed(run, request)


def api_key_name_ok(name: str) -> bool:
    return bool(name) and len(name) <= 100 and all(c.isalnum() or c in "-_." for c in name)
