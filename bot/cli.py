"""`sayso`: run the bot, try it in a local sandbox, manage the database and inspect runs."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from slack_sdk.errors import SlackApiError

from bot.api.cli import add_keys_parser, add_request_parser, run_keys, run_request
from bot.config import ConfigError, Settings, load_settings, require
from bot.serve import wait_for_stop as wait_for_stop  # re-exported: tests/fault/replica.py

log = logging.getLogger("sayso")


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level,
        format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
        stream=sys.stderr,
    )
    for noisy in ("aiohttp.access", "httpx", "httpcore", "slack_bolt", "slack_sdk", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


async def cmd_run(args: argparse.Namespace, settings: Settings) -> None:
    from bot.serve import Mode, load_agents, serve

    mode: Mode = args.mode or ("socket" if settings.slack_app_token else "http")
    require(settings, mode)
    await serve(
        settings, load_agents(args.agents or settings.sayso_agents), mode, args.host, args.port
    )


async def cmd_demo(args: argparse.Namespace, settings: Settings) -> None:
    from bot.sandbox.demo import run_demo

    await run_demo(settings, port=args.port, agents_spec=args.agents)


async def cmd_db(args: argparse.Namespace, settings: Settings) -> None:
    from store import Store

    store = Store(settings.database_url)
    try:
        await store.upgrade()
        print("database is up to date")
    finally:
        await store.close()


async def cmd_runs(args: argparse.Namespace, settings: Settings) -> None:
    from bot.runs_report import show_run, show_runs
    from store import Store

    store = Store(settings.database_url)
    try:
        if args.runs_command == "show":
            code = await show_run(store, args.run_id)
            if code:
                raise SystemExit(code)
        else:
            await show_runs(store, status=args.status, limit=args.limit)
    finally:
        await store.close()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sayso", description="A Slack approval bot for AI agents.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the bot (Socket Mode or HTTP)")
    run.add_argument("--mode", choices=["socket", "http"])
    run.add_argument("--host", default="0.0.0.0")
    run.add_argument("--port", type=int, default=3000)
    run.add_argument("--agents", help="module:attribute naming an Agent or a list of them")
    demo = sub.add_parser("demo", help="try sayso in a local Slack sandbox in your browser")
    demo.add_argument("--port", type=int, default=3000)
    demo.add_argument("--agents", help="module:attribute naming an Agent or a list of them")
    db = sub.add_parser("db", help="database schema")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="apply pending migrations")
    runs = sub.add_parser("runs", help="inspect runs without Slack")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True)
    listing = runs_sub.add_parser("list", help="recent runs")
    listing.add_argument("--status")
    listing.add_argument("--limit", type=int, default=50)
    show = runs_sub.add_parser("show", help="one run, its requests and its audit trail")
    show.add_argument("run_id")
    add_keys_parser(sub)
    add_request_parser(sub)
    return p


COMMANDS = {
    "run": cmd_run,
    "demo": cmd_demo,
    "db": cmd_db,
    "runs": cmd_runs,
    "keys": run_keys,
    "request": run_request,
}


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    try:
        settings = load_settings()
        setup_logging(settings.sayso_log_level)
        asyncio.run(COMMANDS[args.command](args, settings))
    except ConfigError as exc:
        print(f"sayso: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except SlackApiError as exc:
        error = exc.response.get("error") if exc.response is not None else exc
        print(f"sayso: Slack refused the connection ({error}): check the tokens", file=sys.stderr)
        raise SystemExit(1) from None
    except OSError as exc:
        print(f"sayso: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
