"""The durable intake, in Bolt: a state-changing interaction is a row before it is acked.

`RecordIntake` (global middleware, after the signature check, the workspace check and the
replay guard) records the verified payload of every interaction that can change state under a
key made of Slack's own ids (store/intake.py: one insert-ignore), and puts the key in the Bolt
context; a payload already recorded (a Slack retry, a replay that reached another replica) is
acked and dropped. Only then do the listeners run (and ack). `recorded(listener)` wraps each
listener: when it has finished, the row is `done`. A row whose process died between the ack
and `done` is replayed by `IntakeReplayer` (bot/slack/intake_replay.py) through the same app.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import uuid
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Final

from slack_bolt.async_app import AsyncBoltContext
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.service.ports import DirectoryUnavailable
from bot.slack.ids import SLASH_COMMAND, ActionId, CallbackId
from bot.slack.intake_batch import IntakeWriter
from store import Store
from store.intake import Intake

log = logging.getLogger("sayso.slack")

KEY: Final = "sayso_intake_key"
"""The intake key of this request, in its Bolt context (absent: not recorded)."""
REPLAY: Final = "sayso_intake_replay"
"""Set (to the row's key) in the context of a request replayed from our own database."""
RECORDER: Final = "sayso_intake"

STATEFUL_ACTIONS: Final = frozenset(
    {ActionId.APPROVE, ActionId.APPROVE_ALWAYS, ActionId.RETRY, ActionId.CANCEL, ActionId.REVOKE}
)
"""Buttons that change state (the others only open a modal, with the trigger id, inline)."""
STATEFUL_VIEWS: Final = frozenset(
    {CallbackId.EDIT, CallbackId.REJECT, CallbackId.ANSWER, CallbackId.REVIEW, CallbackId.APPROVE}
)
PERSON_SUBTYPES: Final = (None, "thread_broadcast")

WAIT_FOR_SLACK: Final = 5.0
"""Seconds before an interaction that needed Slack while it was away is replayed."""

IN_TURN: Final = ("action:", "view:")
"""Keys of the interactions whose whole work after the ack waits for its person's fair turn
(`Service.intake_turns`, bot/service/fair.py), its reads included; a command takes its turn
(by channel and person) where it starts its run."""

RUN_IDS: Final = uuid.UUID("5a750000-0000-4000-8000-000000000022")


def _digest(body: dict[str, Any]) -> str:
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def _event_kind(body: dict[str, Any]) -> str | None:
    event = body.get("event") or {}
    if not isinstance(event, dict) or event.get("bot_id"):
        return None
    if event.get("type") == "app_mention":
        return "mention"
    if (
        event.get("type") == "message"
        and event.get("thread_ts")
        and event.get("subtype") in PERSON_SUBTYPES
    ):
        return "reply"
    return None


def _kind(body: dict[str, Any]) -> str | None:
    """What this payload is, when it can change state (else None: not recorded)."""
    kind = body.get("type")
    if body.get("command") == SLASH_COMMAND:
        return "command"
    if kind == "block_actions":
        actions = body.get("actions") or [{}]
        return "action" if actions[0].get("action_id") in STATEFUL_ACTIONS else None
    if kind == "view_submission":
        view = body.get("view") or {}
        return "view" if view.get("callback_id") in STATEFUL_VIEWS else None
    if kind == "event_callback":
        return _event_kind(body)
    return None


def intake_key(body: dict[str, Any]) -> tuple[str, str] | None:
    """(key, kind) of a payload to record, from Slack's own ids: the event id of an event, the
    trigger id of a command, click or submission (one per interaction: a retried or replayed
    delivery is the same row; a second click is another). None: nothing to record."""
    kind = _kind(body)
    if kind is None:
        return None
    if kind in ("mention", "reply"):
        slack_id = body.get("event_id") or _digest(body)
    else:
        slack_id = body.get("trigger_id") or _digest(body)
    return f"{kind}:{slack_id}", kind


def intake_key_of(context: AsyncBoltContext) -> str | None:
    key = context.get(KEY)
    return key if isinstance(key, str) else None


def is_replay(context: AsyncBoltContext) -> bool:
    """Is this request replayed from the intake (its first processing may have happened)?"""
    return bool(context.get(REPLAY))


def run_id_for(context: AsyncBoltContext) -> str | None:
    """The id of the run this interaction starts, derived from its intake key: a replay of a
    command that already started its run finds the run instead of starting another."""
    key = intake_key_of(context)
    return uuid.uuid5(RUN_IDS, key).hex if key else None


class RecordIntake(AsyncMiddleware):
    """Global middleware: record state-changing payloads before any listener acks them."""

    def __init__(self, intake: Intake, owner: str, lease: float) -> None:
        self.intake = intake
        self.owner = owner
        self.lease = lease
        self.writer = IntakeWriter(intake, owner, lease)  # group commit under bursts
        self.own_store: Store | None = None

    @classmethod
    def on(cls, store: Store, lease: float) -> RecordIntake:
        """The middleware writing through `store`; on PostgreSQL through an engine of its
        own, so an ack never waits for a pooled connection behind the work of runs (its group
        commit needs one or two). On SQLite: one writer per process, one lock."""
        own = store.own_engine()
        recorder = cls(own.intake(), store.replica_id, lease)
        if own is not store:
            recorder.own_store = own
        return recorder

    async def close(self) -> None:
        try:
            await self.writer.settle()
        finally:
            if self.own_store is not None:
                await self.own_store.close()

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse | None:
        req.context[RECORDER] = self
        replayed = req.context.get(REPLAY)
        if replayed and req.mode == "socket_mode":  # only our replayer sets it (not HTTP)
            req.context[KEY] = replayed
            return await next()
        body = req.body if isinstance(req.body, dict) else {}
        found = intake_key(body)
        if found is None:
            return await next()
        key, kind = found
        if not await self.writer.record(key, kind, body):
            log.info("event=duplicate_interaction key=%s", key)
            return BoltResponse(status=200, body="")
        req.context[KEY] = key
        return await next()

    async def wait_for_slack(self, key: str, error: str) -> None:
        """The interaction needed Slack, which is away: replayed in a few seconds, by any
        replica (the person is told nothing now: Slack could not show it anyway)."""
        log.warning("event=intake_waits_for_slack key=%s error=%s", key, error)
        try:
            await self.intake.wait(key, self.owner, WAIT_FOR_SLACK)
        except Exception as exc:  # the database is away too: replayed once the lease lapses
            log.warning("event=intake_not_waiting key=%s error=%s", key, type(exc).__name__)

    async def finished(self, key: str, result: dict[str, Any]) -> None:
        try:
            await self.writer.done(key, result)
        except Exception as exc:  # the database is away: the row is replayed later
            log.warning("event=intake_not_done key=%s error=%s", key, type(exc).__name__)


_RECORDERS: weakref.WeakKeyDictionary[Any, RecordIntake] = weakref.WeakKeyDictionary()


def use_intake(app: Any, recorder: RecordIntake) -> None:
    """Record the app's state-changing interactions (`close_intake(app)` when stopping)."""
    app.use(recorder)
    _RECORDERS[app] = recorder


async def close_intake(app: Any) -> None:
    recorder = _RECORDERS.pop(app, None)
    if recorder is not None:
        await recorder.close()


def recorded(listener: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """The listener, closing its intake row once it has run (it must take `context`). A
    listener that raises closes it too (with the error): a bug is not replayed forever; a
    database that is away cannot close it, nor does a listener cancelled by a stopping
    process, so the row is replayed once the lease lapses. One that needed Slack while it was
    away (`DirectoryUnavailable`) is replayed a few seconds later, for as long as it lasts."""

    @functools.wraps(listener)
    async def wrapper(**kwargs: Any) -> None:
        context: AsyncBoltContext = kwargs["context"]
        key = intake_key_of(context)
        recorder = context.get(RECORDER)
        if key is None or not isinstance(recorder, RecordIntake):
            await listener(**kwargs)
            return
        hold = _Hold(recorder, key)
        result: dict[str, Any] = {"ok": True}
        turn = _TurnAfterAck(kwargs.get("ack"), context, kwargs.get("body") or {})
        if turn.ack is not None and key.startswith(IN_TURN):
            kwargs["ack"] = turn
        try:
            await listener(**kwargs)
        except asyncio.CancelledError:  # the process is stopping: the row is replayed
            result = {}
            raise
        except DirectoryUnavailable as exc:
            result = {}
            hold.cancel()
            await recorder.wait_for_slack(key, str(exc))
        except Exception as exc:
            result = {"error": type(exc).__name__}
            raise
        finally:
            await turn.end()
            hold.cancel()
            if result:
                await recorder.finished(key, result)

    return wrapper


class _TurnAfterAck:
    """A click's or a form's `ack`: once Slack has its answer, the work that follows waits
    for its person's turn (`Service.intake_turns`), so the acks of clicks arriving meanwhile
    are not queued on the event loop behind the reads and writes of every click before them
    (the work goes as fast: the loop does one thing at a time anyway), and one person's burst
    does not hold up the others."""

    def __init__(self, ack: Any, context: AsyncBoltContext, body: dict[str, Any]) -> None:
        self.ack, self.context, self.body = ack, context, body
        self.held = contextlib.AsyncExitStack()
        self.taken = False

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from bot.slack.listeners.common import SERVICE_KEY, actor_from  # (they import this)

        answered = await self.ack(*args, **kwargs)
        service = self.context.get(SERVICE_KEY)
        if service is not None and not self.taken:
            self.taken = True
            person = actor_from(self.body).user_id
            await self.held.enter_async_context(service.intake_turns.turn(None, person))
        return answered

    async def end(self) -> None:
        await self.held.aclose()


class _Hold:
    """While a listener runs longer than half the lease, renew its row's hold every half
    lease (so no other replica replays a click that is still being processed)."""

    def __init__(self, recorder: RecordIntake, key: str) -> None:
        self.recorder, self.key = recorder, key
        self.every = max(recorder.lease / 2, 0.5)
        self.loop = asyncio.get_running_loop()
        self.handle = self.loop.call_later(self.every, self._tick)
        self.renewing: asyncio.Task[bool] | None = None

    def _tick(self) -> None:
        intake = self.recorder.intake
        self.renewing = self.loop.create_task(
            intake.renew(self.key, self.recorder.owner, self.recorder.lease)
        )
        self.handle = self.loop.call_later(self.every, self._tick)

    def cancel(self) -> None:
        self.handle.cancel()
