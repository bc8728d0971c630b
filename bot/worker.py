"""Workers: claim ready runs from the store and drive them, never on the loop that acks Slack.

- `sayso worker` runs one `Worker` on its own process's event loop (no front).
- `sayso run` runs its front on the main event loop and an `EmbeddedWorker` on a thread with
  its own event loop, its own Store (engine) and its own Slack client: engines and clients are
  bound to the loop that made them.
- The e2e fixtures and fault replicas use the in-process mode by default: `build_bot(...)`
  alone drives the runs it starts on its own loop (`Bot.drives_runs`). With
  `SAYSO_TEST_SPLIT=1` they run split: the e2e bot as `sayso run`, each fault replica as a
  front process plus a worker process.

Concurrency counts runs in flight (a run awaiting its model or a tool holds one slot, and no
CPU): `SAYSO_WORKER_CONCURRENCY`, default 200. Loading and presenting, the CPU-bound part, is
bounded separately (`ServiceSettings.cpu_slots`). A worker is woken by PostgreSQL NOTIFY
(store/wakeups.py) or, embedded, in-process by its front; the sweep is the safety net.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bot import event_loop
from bot.config import Settings
from bot.service.events import PolicyReloaded

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from bot.front import Bot
    from bot.service import Service
    from bot.service.notifier import RequestNotifier
    from bot.service.registry import AgentRegistry
    from bot.slack.outbox import OutboxDispatcher
    from store import ApprovalRequestRecord, Lease, Store

log = logging.getLogger("sayso.worker")

CLAIM_BATCH = 50


class Worker:
    """Claims ready runs (up to `concurrency` in flight) and drives them on this event loop."""

    def __init__(
        self, service: Service, *, concurrency: int, sweep_interval: float, grace: float
    ) -> None:
        self.service = service
        self.concurrency = concurrency
        self.sweep_interval = sweep_interval
        self.grace = grace
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup = asyncio.Event()
        self._mine: set[asyncio.Task[Any]] = set()
        self._full = False
        self._stopping = False

    @property
    def runs_in_flight(self) -> int:
        return len(self._mine)

    def has_room(self) -> bool:
        """Could this worker drive one more run now? (Read from any thread: a hint.)"""
        return self._loop is not None and not self._stopping and len(self._mine) < self.concurrency

    def adopt(self, lease: Lease) -> None:
        """Drive a run claimed for this worker by its front (on this worker's loop)."""
        task = self.service.drive_claimed(lease)
        self._mine.add(task)
        task.add_done_callback(self._finished)

    def wake(self, run_id: str | None = None) -> None:
        """Look for ready runs now. Safe to call from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wakeup.set()
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._wakeup.set)

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and drive runs until `stop` is set; then stop gracefully (`RunDriver.drain`)."""
        self._loop = asyncio.get_running_loop()
        listener = self.service.ready_listener(self.wake)
        listener.start()
        self.service.start_sweeper(self.sweep_interval)
        stopped = asyncio.create_task(stop.wait())
        log.info(
            "event=worker_started concurrency=%d loop=%s", self.concurrency, event_loop.running()
        )
        try:
            while not stop.is_set():
                self._wakeup.clear()
                try:
                    await self.claim()
                except Exception:
                    log.exception("event=claim_failed")
                woken = asyncio.create_task(self._wakeup.wait())
                await asyncio.wait(
                    {woken, stopped},
                    timeout=self.sweep_interval,
                    return_when=asyncio.FIRST_COMPLETED,
                )
                woken.cancel()
        finally:
            self._stopping = True
            stopped.cancel()
            log.info("event=worker_stopping in_flight=%d grace=%.1f", len(self._mine), self.grace)
            await listener.close()
            await self.service.stop_sweeper()
            await self.service.drain(self.grace)
            await self.service.close()
            log.info("event=worker_stopped")

    async def claim(self) -> None:
        """Claim ready runs while there is room, in batches, oldest first."""
        while not self._stopping:
            free = self.concurrency - len(self._mine)
            self._full = free <= 0
            if self._full:
                return
            batch = min(free, CLAIM_BATCH)
            tasks = await self.service.claim_ready(batch)
            for task in tasks:
                self._mine.add(task)
                task.add_done_callback(self._finished)
            if len(tasks) < batch:
                return

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._mine.discard(task)
        if self._full:  # room again for a backlog left unclaimed
            self._full = False
            self._wakeup.set()


async def run_worker(
    settings: Settings,
    agents: AgentRegistry,
    stop: asyncio.Event,
    *,
    upgrade: bool = True,
    on_started: Callable[[Worker], None] | None = None,
    front_outbox: FrontOutbox | None = None,
) -> None:
    """A worker with its own Store and Slack client, on the running event loop, until `stop`.

    Its Slack writes are outbox rows: sent by its own dispatcher, or (`front_outbox`, the
    embedded worker of `sayso run`) by its front's, woken in-process after each put."""
    from bot.agent.scrub import install_log_scrubbing
    from bot.api.webhooks import WebhookSender
    from bot.compose import build_store, web_client

    install_log_scrubbing()  # `sayso worker` never builds a bot: its logs are scrubbed too
    client = web_client(settings)
    store = build_store(settings)
    service, dispatcher = _service_and_dispatcher(settings, agents, store, client, front_outbox)
    # The sweep runs here, not on the fronts: the API requests it expires get the first attempt
    # of their webhooks from here; the fronts make the retries (each attempt is claimed first).
    webhooks = WebhookSender(service.api)
    try:
        if upgrade:
            await store.upgrade()
        if dispatcher is not None:
            await dispatcher.start()
        try:
            auth = await client.auth_test()
            service.workspace_team_id = auth.get("team_id")
        except Exception as exc:
            log.warning("event=auth_test_failed error=%s", exc)
        worker = Worker(
            service,
            concurrency=settings.worker_concurrency,
            sweep_interval=settings.sayso_sweep_interval,
            grace=settings.sayso_shutdown_grace,
        )
        _observe(worker, [client] + ([dispatcher.client] if dispatcher else []), settings)
        if on_started is not None:
            on_started(worker)
        await webhooks.start(retries=False)
        try:
            await worker.run(stop)
        finally:
            await webhooks.stop()
    finally:
        if dispatcher is not None:
            await dispatcher.stop()
        await store.close()


def _observe(worker: Worker, clients: list[Any], settings: Settings) -> None:
    """`sayso_runs_in_flight` is this worker's; the Slack errors of its clients (its own and
    its outbox's) and its decisions are counted (and traced, with `sayso[otel]` and an OTLP
    endpoint)."""
    from bot.ops import metrics, metrics_http, tracing

    traced = tracing.setup(settings)
    metrics.install()
    metrics.runs_in_flight.set_function(lambda: worker.runs_in_flight)
    metrics.watch_store(worker.service.store)
    for client in clients:
        metrics_http.count_slack_errors(client)
        if traced:
            tracing.trace_slack_calls(client)


def _service_and_dispatcher(
    settings: Settings,
    agents: AgentRegistry,
    store: Store,
    client: AsyncWebClient,
    front_outbox: FrontOutbox | None,
) -> tuple[Service, OutboxDispatcher | None]:
    from bot.compose import build_dispatcher, build_outbox, build_service
    from bot.slack.presenter import SlackPresenter

    outbox = build_outbox(store)
    presenter = SlackPresenter(client, agents, outbox)
    service = build_service(settings, agents, store, client, presenter)
    if front_outbox is not None:
        outbox.subscribe(front_outbox.wake)
        outbox.sender_here = front_outbox.sending  # no NOTIFY while the front's is the sender
        return service, None
    return service, build_dispatcher(store, outbox, client, presenter)


class FrontOutbox:
    """The front's dispatcher as the embedded worker's puts see it (from the worker's thread)."""

    def __init__(self, dispatcher: OutboxDispatcher, worker: EmbeddedWorker) -> None:
        self.dispatcher = dispatcher
        self.worker = worker

    def wake(self, key: str | None, in_seconds: float = 0.0) -> None:
        loop = self.worker._front_loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.dispatcher.wake, key, in_seconds)

    def sending(self) -> bool:
        return self.dispatcher.sending()


class EmbeddedWorker:
    """The worker of `sayso run`: its own thread and event loop, so that driving runs never
    delays an ack. The front wakes it in-process (`wake`) when it hands a run off (see
    `attach`)."""

    def __init__(self, settings: Settings, agents: AgentRegistry) -> None:
        self.settings = settings
        self.agents = agents
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._worker: Worker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._front_loop: asyncio.AbstractEventLoop | None = None
        self._front_notifier: RequestNotifier | None = None
        self._front_outbox: FrontOutbox | None = None

    def attach(self, bot: Bot) -> None:
        """Make `bot` this worker's front, as `sayso run` does: it hands its runs here (woken
        in-process), SIGHUP reloads this worker's policy too, and the API long-polls waiting on
        the front wake when this worker settles their request (an expiry, found by its sweep;
        SQLite has no NOTIFY to tell them)."""
        bot.hand_runs_to_workers(self.wake, self)
        bot.service.subscribe(PolicyReloaded, lambda _: self.reload_policy())
        self._front_notifier = bot.service.api.notifier
        if bot.dispatcher is not None:  # one dispatcher per process: the front's sends ours
            self._front_outbox = FrontOutbox(bot.dispatcher, self)

    @property
    def busy(self) -> bool:
        """Is a run being driven (or claimed) here now? (For tests waiting for quiet.)"""
        worker = self._worker
        return worker is not None and bool(worker.runs_in_flight or worker.service.busy)

    @property
    def service(self) -> Service | None:
        """The service driving the runs, once started (its store and Slack client are bound to
        the worker's event loop)."""
        return self._worker.service if self._worker is not None else None

    def wake(self, run_id: str | None = None) -> None:
        if self._worker is not None:
            self._worker.wake(run_id)

    def has_room(self) -> bool:
        """(Called on the front's loop) could this worker take a run now?"""
        worker, loop = self._worker, self._loop
        return (
            worker is not None and loop is not None and not loop.is_closed() and worker.has_room()
        )

    def take(self, lease: Lease) -> bool:
        """(Called on the front's loop) drive a run the front claimed for this worker: no
        release, NOTIFY and claim in between. A run given as the worker stops is driven or
        handed back by its drain; one given as its loop closes is recovered once its lease
        lapses, as after a crash."""
        worker, loop = self._worker, self._loop
        if worker is None or loop is None or not self.has_room():
            return False
        try:
            loop.call_soon_threadsafe(worker.adopt, lease)
        except RuntimeError:  # the loop closed meanwhile
            return False
        return True

    def reload_policy(self) -> None:
        """SIGHUP reached the front: the worker (which proposes calls, so evaluates the
        policy) reads SAYSO_POLICY again, on its own loop."""
        loop, worker = self._loop, self._worker
        if loop is not None and worker is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(worker.service.reload_policy)

    async def start(self, limit: float = 30.0) -> None:
        self._front_loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._main, name="sayso-worker", daemon=True)
        self._thread.start()
        await asyncio.to_thread(self._started.wait, limit)
        if self._error is not None:
            raise self._error
        if self._worker is None:
            raise RuntimeError("the embedded worker did not start")

    async def stop(self) -> None:
        """Stop claiming, let runs finish within the grace period, then hand the rest back."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, self.settings.sayso_shutdown_grace + 10)

    def _main(self) -> None:
        try:
            event_loop.run(self._serve(), self.settings.sayso_event_loop)
        except BaseException as exc:  # told to the front through start()
            self._error = exc
            log.exception("event=embedded_worker_failed")
        finally:
            self._started.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()

        def started(worker: Worker) -> None:
            worker.service.api.subscribe_settled(self._settled)
            self._worker = worker
            self._started.set()

        await run_worker(
            self.settings,
            self.agents,
            self._stop,
            upgrade=False,
            on_started=started,
            front_outbox=self._front_outbox,
        )

    async def _settled(self, request: ApprovalRequestRecord) -> None:
        loop, notifier = self._front_loop, self._front_notifier
        if loop is not None and notifier is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the front's loop closed meanwhile
                loop.call_soon_threadsafe(notifier.wake, request.id, request)
