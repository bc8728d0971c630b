"""Typed events: what the service tells whoever subscribed (front ends, workers, the API).

They replace callbacks patched in after construction: a front end subscribes to what it
reacts to (`Service.subscribe`), and the service emits without knowing who listens. A failing
subscriber is logged and never stops the others, nor the use-case that emitted.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from store import ApprovalRequestRecord, Lease

log = logging.getLogger("sayso.service")


@dataclass(frozen=True)
class RequestSettled:
    """A request left `pending`: decided, answered, expired or cancelled."""

    request: ApprovalRequestRecord


@dataclass(frozen=True)
class RunReady:
    """A decision completed a run's pause: it may continue. With `lease`, this process
    claimed the run in the decision's own transaction and should drive it now."""

    run_id: str
    lease: Lease | None = None


@dataclass(frozen=True)
class RunHandedOff:
    """A front handed a run to the workers (saved ready in the store): wake a local one."""

    run_id: str


@dataclass(frozen=True)
class StandingApprovalGiven:
    """An approval also allowed its tool in its thread for a while."""

    standing_approval_id: str
    run_id: str


@dataclass(frozen=True)
class PolicyReloaded:
    """SIGHUP read the policy file again (other services of the process follow)."""

    path: str


Event = RequestSettled | RunReady | RunHandedOff | StandingApprovalGiven | PolicyReloaded
E = TypeVar("E", RequestSettled, RunReady, RunHandedOff, StandingApprovalGiven, PolicyReloaded)
Handler = Callable[[E], Awaitable[None] | None]


class Events:
    """One hub per service: subscribers in the order they subscribed."""

    def __init__(self) -> None:
        self._handlers: dict[type[Any], list[Callable[[Any], Any]]] = {}
        self._pending: set[asyncio.Future[Any]] = set()

    def subscribe(self, kind: type[E], handler: Handler[E]) -> None:
        self._handlers.setdefault(kind, []).append(handler)

    def unsubscribe(self, kind: type[E], handler: Handler[E]) -> None:
        handlers = self._handlers.get(kind, [])
        if handler in handlers:
            handlers.remove(handler)

    def emit_now(self, event: Event) -> None:
        """Emit from synchronous code (a signal handler): async subscribers are scheduled on
        the running loop."""
        for handler in list(self._handlers.get(type(event), ())):
            try:
                result = handler(event)
                if inspect.isawaitable(result):
                    task = asyncio.ensure_future(result)
                    self._pending.add(task)
                    task.add_done_callback(self._pending.discard)
            except Exception:
                log.exception("event=subscriber_failed kind=%s", type(event).__name__)

    async def emit(self, event: Event) -> None:
        for handler in list(self._handlers.get(type(event), ())):
            try:
                result = handler(event)
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("event=subscriber_failed kind=%s", type(event).__name__)
