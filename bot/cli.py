"""`sayso`: run the bot, try it in a local sandbox, manage the database and inspect runs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

# Imports are lazy: `sayso hook claude-code` starts a process per tool call, and an ungated
# call must answer in a few tens of milliseconds (see main()).
if TYPE_CHECKING:
    import argparse

    from bot.config import Settings
    from bot.service.registry import AgentRegistry


def __getattr__(name: str) -> Any:
    if name == "wait_for_stop":  # re-exported: tests/fault/replica.py
        from bot.serve import wait_for_stop

        return wait_for_stop
    raise AttributeError(f"module 'bot.cli' has no attribute {name!r}")


def setup_logging(level: str, fmt: str = "text") -> None:
    """Key=value lines on stderr (or JSON objects, `SAYSO_LOG_FORMAT=json`: bot/ops/logs.py),
    every one scrubbed of secrets (see bot/agent/scrub.py)."""
    import logging

    from bot.agent.scrub import install_log_scrubbing

    install_log_scrubbing()
    if fmt == "json":
        from bot.ops.logs import use_json_logs

        use_json_logs(level)
    else:
        logging.basicConfig(
            level=level,
            format="%(asctime)s level=%(levelname)s logger=%(name)s %(message)s",
            stream=sys.stderr,
        )
    # aiosqlite logs each statement at DEBUG: a flood that says nothing the store does not
    noisy = (
        "aiohttp.access",
        "httpx",
        "httpcore",
        "slack_bolt",
        "slack_sdk",
        "alembic",
        "aiosqlite",
    )
    for name in noisy:
        logging.getLogger(name).setLevel(logging.WARNING)


async def cmd_run(args: argparse.Namespace, settings: Settings) -> None:
    from bot.config import require
    from bot.serve import Mode, load_agents, serve

    mode: Mode = args.mode or ("socket" if settings.slack_app_token else "http")
    require(settings, mode)
    warn_renamed_settings(settings)
    agents = load_agents(args.agents or settings.sayso_agents)
    await serve(settings, agents, mode, args.host, args.port, worker=not args.no_worker)


async def cmd_worker(args: argparse.Namespace, settings: Settings) -> None:
    from bot.config import require_bot_token
    from bot.serve import load_agents, serve_worker

    require_bot_token(settings)
    warn_renamed_settings(settings)
    if args.concurrency is not None:
        settings = settings.model_copy(update={"sayso_worker_concurrency": args.concurrency})
    await serve_worker(
        settings,
        load_agents(args.agents or settings.sayso_agents),
        metrics_port=args.metrics_port,
        metrics_host=args.metrics_host,
    )


def warn_renamed_settings(settings: Settings) -> None:
    if settings.sayso_max_active_runs is not None and settings.sayso_worker_concurrency is None:
        import logging

        logging.getLogger("sayso").warning(
            "event=renamed_setting: SAYSO_MAX_ACTIVE_RUNS is now SAYSO_WORKER_CONCURRENCY "
            "(runs in flight per worker; a run awaiting its model holds no CPU): using %d",
            settings.sayso_max_active_runs,
        )


async def cmd_mcp(args: argparse.Namespace, settings: Settings) -> None:
    from bot.config import ConfigError

    try:
        from bot.mcp.stdio import serve_stdio
    except ImportError:
        raise ConfigError("`sayso mcp` needs the MCP SDK: pip install 'sayso[mcp]'") from None
    await serve_stdio(settings)


async def cmd_demo(args: argparse.Namespace, settings: Settings) -> None:
    from bot.sandbox.demo import run_demo

    await run_demo(
        settings, port=args.port, agents_spec=args.agents, slack_limits=args.slack_limits
    )


async def cmd_db(args: argparse.Namespace, settings: Settings) -> None:
    from store import Store

    store = Store(settings.database_url, encryption_keys=settings.encryption_keys())
    try:
        await store.upgrade()
        if args.db_command == "reencrypt":
            from bot.config import ConfigError

            if not settings.encryption_keys():
                raise ConfigError("SAYSO_ENCRYPTION_KEYS is not set: put the new key first")
            report = await store.reencrypt_report(200)
            print(f"re-encrypted {report.changed} value(s) with the first key")
            if report.unreadable:
                print(
                    f"{report.unreadable} value(s) no key reads were left as they are (logged "
                    "with their table and row): add the key they were written with and run again"
                )
        else:
            print("database is up to date")
    finally:
        await store.close()


async def cmd_runs(args: argparse.Namespace, settings: Settings) -> None:
    from bot.runs_report import masker_for, show_run, show_runs
    from store import Store

    store = Store(settings.database_url, encryption_keys=settings.encryption_keys())
    try:
        if args.runs_command == "show":
            code = await show_run(
                store,
                args.run_id,
                masker_for(_agents_or_none(settings)),
                settings.receipt_signer(),
            )
            if code:
                raise SystemExit(code)
        elif args.runs_command == "cancel":
            from bot.runs_cancel import cancel_from_cli

            code = await cancel_from_cli(store, settings, args.run_id)
            if code:
                raise SystemExit(code)
        else:
            await show_runs(store, status=args.status, limit=args.limit)
    finally:
        await store.close()


def _agents_or_none(settings: Settings) -> AgentRegistry | None:
    """The agents, to know which tool arguments are sensitive (None when they do not load)."""
    from bot.serve import load_agents

    try:
        return load_agents(settings.sayso_agents)
    except Exception as exc:
        print(f"(agents not loaded, every argument is masked: {exc})", file=sys.stderr)
        return None


async def cmd_audit(args: argparse.Namespace, settings: Settings) -> None:
    from bot.ops.audit_cli import run_audit

    await run_audit(args, settings)


async def cmd_doctor(args: argparse.Namespace, settings: Settings) -> None:
    from bot.ops.doctor import doctor

    code = await doctor(settings, args.json)
    if code:
        raise SystemExit(code)


async def cmd_policy(args: argparse.Namespace, settings: Settings) -> None:
    from bot.policy_cli import run_policy_command

    code = run_policy_command(args, settings)
    if code:
        raise SystemExit(code)


def parser() -> argparse.ArgumentParser:
    import argparse

    p = argparse.ArgumentParser(prog="sayso", description="A Slack approval bot for AI agents.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the bot (Socket Mode or HTTP)")
    run.add_argument("--mode", choices=["socket", "http"])
    run.add_argument("--host", default="0.0.0.0")
    run.add_argument("--port", type=int, default=3000)
    run.add_argument("--agents", help="module:attribute naming an Agent or a list of them")
    run.add_argument(
        "--no-worker",
        action="store_true",
        help="run the front alone: runs are driven by `sayso worker` processes (PostgreSQL)",
    )
    worker = sub.add_parser("worker", help="drive runs, without a front (PostgreSQL)")
    worker.add_argument("--concurrency", type=int, help="runs in flight at once (default 200)")
    worker.add_argument("--agents", help="module:attribute naming an Agent or a list of them")
    worker.add_argument("--metrics-port", type=int, help="serve GET /metrics on this port")
    worker.add_argument("--metrics-host", default="0.0.0.0", help="(with --metrics-port)")
    sub.add_parser("mcp", help="serve MCP over stdio (the key in SAYSO_KEY)")
    demo = sub.add_parser("demo", help="try sayso in a local Slack sandbox in your browser")
    demo.add_argument("--port", type=int, default=3000)
    demo.add_argument("--agents", help="module:attribute naming an Agent or a list of them")
    demo.add_argument(
        "--slack-limits",
        action="store_true",
        help="the sandbox enforces Slack's rate limits (Tier 2/3/4, 1 message/s per channel)",
    )
    _add_db_and_runs(sub)
    from bot.api.cli import add_keys_parser, add_request_parser
    from bot.hooks.cli import add_hook_parser
    from bot.ops.audit_cli import add_parser as add_audit_parser
    from bot.policy_cli import add_parser
    from bot.proxy.cli import add_proxy_parser

    add_parser(sub)
    add_audit_parser(sub)
    doctor = sub.add_parser("doctor", help="check the configuration: one line per check, a fix")
    doctor.add_argument("--json", action="store_true", help="one JSON object for machines")
    add_keys_parser(sub)
    add_request_parser(sub)
    add_proxy_parser(sub)
    add_hook_parser(sub)
    return p


def _add_db_and_runs(sub: Any) -> None:
    """`sayso db ...` and `sayso runs ...`."""
    db = sub.add_parser("db", help="database schema and encryption keys")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    db_sub.add_parser("upgrade", help="apply pending migrations")
    db_sub.add_parser(
        "reencrypt", help="rewrite stored data with the first key of SAYSO_ENCRYPTION_KEYS"
    )
    runs = sub.add_parser("runs", help="inspect or cancel runs without Slack")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True)
    listing = runs_sub.add_parser("list", help="recent runs")
    listing.add_argument("--status")
    listing.add_argument("--limit", type=int, default=50)
    show = runs_sub.add_parser("show", help="one run, its requests and its audit trail")
    show.add_argument("run_id")
    cancel = runs_sub.add_parser(
        "cancel", help="cancel a run: no further tool runs, its open requests close"
    )
    cancel.add_argument("run_id")


async def run_keys(args: argparse.Namespace, settings: Settings) -> None:
    from bot.api.cli import run_keys as keys

    await keys(args, settings)


async def run_request(args: argparse.Namespace, settings: Settings) -> None:
    from bot.api.cli import run_request as request

    await request(args, settings)


async def cmd_proxy(args: argparse.Namespace, settings: Settings) -> None:
    from bot.proxy.cli import run_proxy

    await run_proxy(args, settings)


COMMANDS = {
    "run": cmd_run,
    "worker": cmd_worker,
    "mcp": cmd_mcp,
    "demo": cmd_demo,
    "db": cmd_db,
    "runs": cmd_runs,
    "policy": cmd_policy,
    "audit": cmd_audit,
    "doctor": cmd_doctor,
    "keys": run_keys,
    "request": run_request,
    "proxy": cmd_proxy,
}


def main(argv: Sequence[str] | None = None) -> None:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["hook"]:  # a process per tool call: nothing heavy is imported
        from bot.hooks.cli import run_hook

        raise SystemExit(run_hook(words[1:]))
    args = parser().parse_args(words)
    from slack_sdk.errors import SlackApiError

    from bot import event_loop
    from bot.config import ConfigError, load_settings
    from store.crypto import EncryptionKeyError

    try:
        settings = load_settings()
        setup_logging(settings.sayso_log_level, settings.sayso_log_format)
        event_loop.run(COMMANDS[args.command](args, settings), settings.sayso_event_loop)
    except (ConfigError, event_loop.EventLoopError) as exc:
        print(f"sayso: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except EncryptionKeyError as exc:
        print(f"sayso: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
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
