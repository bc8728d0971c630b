"""`sayso audit verify` and `sayso audit export` (the parser and the commands)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TypeVar

from bot.config import ConfigError, Settings
from bot.ops.audit import Format, export, verify
from store import Store
from store.audit import EventFilter

T = TypeVar("T")


def _when(value: str) -> datetime:
    """`2026-01-01` or an ISO 8601 time; naive times are UTC."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a date: use 2026-01-01 or 2026-01-01T12:00:00+00:00"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = sub.add_parser("audit", help="verify the audit hash chain, export the audit trail")
    audit_sub = audit.add_subparsers(dest="audit_command", required=True)
    audit_sub.add_parser(
        "verify", help="check the hash chain; names the first broken event (exit 1)"
    )
    exp = audit_sub.add_parser("export", help="stream audit events to stdout, in order")
    exp.add_argument("--since", type=_when, required=True, help="from this date (inclusive)")
    exp.add_argument("--until", type=_when, help="up to this date (exclusive)")
    exp.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    exp.add_argument("--agent", help="only the events of this agent's runs")
    exp.add_argument("--tenant", help="only the events of this workspace (team id)")


async def run_audit(args: argparse.Namespace, settings: Settings) -> None:
    store = Store(settings.database_url, encryption_keys=settings.encryption_keys())
    try:
        if args.audit_command == "verify":
            verdict = await _checked(verify(store.audit))
            print(verdict.line(), file=sys.stdout if verdict.ok else sys.stderr)
            if not verdict.ok:
                raise SystemExit(1)
            return
        fmt: Format = args.format
        where = EventFilter(args.since, args.until, args.agent, args.tenant)
        count = await _checked(export(store.audit, sys.stdout, fmt, where))
        print(f"exported {count} audit event(s)", file=sys.stderr)
    finally:
        await store.close()


async def _checked(work: Awaitable[T]) -> T:
    from sqlalchemy.exc import OperationalError, ProgrammingError

    try:
        return await work
    except (OperationalError, ProgrammingError) as exc:
        if "audit_chain" in str(exc) or "no such column" in str(exc):
            raise ConfigError(
                "the database has no audit chain yet: run `sayso db upgrade` first"
            ) from None
        raise
