"""One sayso replica for the fault suite: the real bot (build_bot) serving HTTP on a port.

    python -m tests.fault.replica --port 4001 --effects /tmp/effects.jsonl \
        [--model-url URL] [--hang SECONDS] [--die-after-decision] [--min-approvals N]
        [--escalate-after SECONDS] [--die-before METHOD] [--die-showing-end {put,mark,cancel}]

Slack, database, lease and sweep settings come from the environment as for `sayso run`
(SLACK_BOT_TOKEN, SLACK_SIGNING_SECRET, SLACK_API_URL, DATABASE_URL, SAYSO_LEASE_SECONDS,
SAYSO_SWEEP_INTERVAL, SAYSO_REPLICA_ID). The agents come from tests.fault.agents.

`--role front` serves HTTP and hands every run to workers (`sayso run --no-worker`);
`--role worker` only claims and drives runs (`sayso worker`), until SIGTERM. The default
role is the single process that does both on one event loop (the in-process mode).

`--die-after-decision` is fault injection: this process SIGKILLs itself the moment a
recorded decision makes the run ready, before it claims and continues the run (a front: before
it wakes the workers). When it leads its process group (tests/fault/cluster.py starts each
replica so, and a split replica's worker in its front's group) the whole group dies with it.

`--die-before METHOD` is fault injection too: the first call of that `Service` method
(`decide`, `cancel`, `thread_reply`, `start`) waits until the interaction's ack has gone out
(the listener acked before calling it), then SIGKILLs the process group: the click was
acknowledged and recorded, and never processed here.

`--die-showing-end put` SIGKILLs the process that ended a run after the end was saved and
before anything of it was put in the outbox; `mark`: after all of it was put, before the run
was marked shown; `cancel`: after a cancel was saved, before its cards and note were put.
Either way another process must show the end once.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from typing import Any

from aiohttp import web

from bot.cli import setup_logging
from bot.compose import build_bot
from bot.config import Settings
from bot.serve import serve_worker, wait_for_stop
from bot.service import Service, control
from bot.service.registry import AgentRegistry
from bot.service.runs.drive import RunDriver as Runner
from bot.service.runs.present import RunPresenter
from store import Lease
from store.repos.runs import RunRepository
from tests.fault.agents import make_agents

log = logging.getLogger("sayso.fault")


def _die(what: str) -> None:
    log.warning("event=fault_injected %s: SIGKILL", what)
    logging.shutdown()
    if os.getpgrp() == os.getpid():  # the replica's process group: its worker too
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def die_before(method: str) -> None:
    """SIGKILL at the first call of `Service.<method>`, once the ack has been sent."""

    async def dying(self: Service, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.3)  # Bolt answers Slack as soon as the listener acked
        _die(f"before Service.{method}")

    setattr(Service, method, dying)


def die_after_decision() -> None:
    """SIGKILL once a decision is recorded, before its run continues: whether the run was
    left for any replica (`continue_run`) or claimed with the decision (`drive_claimed`: then
    its lease must lapse before another replica takes it)."""

    def die(run_id: str) -> None:
        log.warning("event=fault_injected run_id=%s: SIGKILL before the continuation", run_id)
        logging.shutdown()
        if os.getpgrp() == os.getpid():  # the replica's process group: its worker too
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)

    async def dying(self: Runner, run_id: str, *, retry: bool = False) -> bool:
        die(run_id)
        return False  # pragma: no cover

    def dying_claimed(self: Runner, lease: Lease) -> asyncio.Task[Any]:
        die(lease.run_id)
        raise AssertionError("unreachable")  # pragma: no cover

    Runner.continue_run = dying  # type: ignore[method-assign]
    Runner.drive_claimed = dying_claimed  # type: ignore[method-assign]


def die_showing_end(where: str) -> None:
    """SIGKILL between a run's end and its showing: before the puts or before the mark."""
    if where == "cancel":

        async def before_showing(show: Any, done: Any, actor: str) -> bool:
            _die(f"run_id={done.run.id} cancelled by {actor}, before showing it")
            return False  # pragma: no cover

        control.show_cancelled = before_showing  # type: ignore[assignment]
        return
    if where == "put":

        async def before_put(self: RunPresenter, run: Any, *args: Any, **kwargs: Any) -> None:
            _die(f"run_id={run.id} ended, before showing it")

        RunPresenter.show_end = before_put  # type: ignore[method-assign]
        return

    async def before_mark(self: RunRepository, run_id: str, version: int) -> None:
        _die(f"run_id={run_id} shown, before marking it")

    RunRepository.mark_shown = before_mark  # type: ignore[method-assign]


async def serve(args: argparse.Namespace) -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    setup_logging(settings.sayso_log_level)
    agents = AgentRegistry(
        make_agents(
            args.model_url, args.effects, args.hang, args.min_approvals, args.escalate_after
        )
    )
    if args.role == "worker":
        await serve_worker(settings, agents)
        return
    bot = build_bot(settings, agents)
    if args.role == "front":
        bot.hand_runs_to_workers(lambda run_id: None)
    await bot.start()
    runner = web.AppRunner(bot.web_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port).start()
    log.info("event=replica_ready replica=%s port=%d", settings.sayso_replica_id, args.port)
    try:
        await wait_for_stop()
    finally:
        await runner.cleanup()
        await bot.stop()


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m tests.fault.replica")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--effects", required=True)
    p.add_argument("--model-url", required=True)
    p.add_argument("--hang", type=float, default=0.0)
    p.add_argument("--die-after-decision", action="store_true")
    p.add_argument("--min-approvals", type=int, default=1)
    p.add_argument("--escalate-after", type=float, default=None)
    p.add_argument("--role", choices=["replica", "front", "worker"], default="replica")
    p.add_argument("--die-before", default=None)
    p.add_argument("--die-showing-end", choices=["put", "mark", "cancel"], default=None)
    args = p.parse_args()
    if args.die_showing_end:
        die_showing_end(args.die_showing_end)
    if args.die_before:
        die_before(args.die_before)
    if args.die_after_decision:
        die_after_decision()
    asyncio.run(serve(args))


if __name__ == "__main__":
    main()
