"""The outbox's rows as the store hands them out, and the SQL conditions that claim them
(store/outbox.py has the repository and the design)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from store.db import Database, insert_ignore
from store.schema import slack_outbox as ob

KINDS = ("message", "ephemeral", "home", "stream")
PENDING, SENT, DROPPED, FAILED = "pending", "sent", "dropped", "failed"


@dataclass(frozen=True)
class OutboxRow:
    """A claimed row: everything the dispatcher needs to send its latest version."""

    key: str
    kind: str
    team_id: str | None
    channel: str | None
    thread_ts: str | None  # resolved from `thread_key` when the row names one
    thread_key: str | None
    user_id: str | None
    payload: dict[str, Any]
    version: int
    sent_version: int
    ts: str | None
    progress: int
    unsure: bool
    attempts: int
    expires_at: datetime | None
    created_at: datetime
    claim_token: str | None
    claim_expires_at: datetime | None
    state: str = PENDING
    last_error: str | None = None


def outbox_row(m: Any, thread_ts: str | None = None) -> OutboxRow:
    return OutboxRow(
        key=m["key"],
        kind=m["kind"],
        team_id=m["team_id"],
        channel=m["channel"],
        thread_ts=thread_ts or m["thread_ts"],
        thread_key=m["thread_key"],
        user_id=m["user_id"],
        payload=dict(m["payload"] or {}),
        version=m["version"],
        sent_version=m["sent_version"],
        ts=m["ts"],
        progress=m["progress"],
        unsure=bool(m["unsure"]),
        attempts=m["attempts"],
        expires_at=m["expires_at"],
        created_at=m["created_at"],
        claim_token=m["claim_token"],
        claim_expires_at=m["claim_expires_at"],
        state=m["state"],
        last_error=m["last_error"],
    )


def claim_free(now: Any, table: Any = ob) -> sa.ColumnElement[bool]:
    return sa.or_(table.c.claim_token.is_(None), table.c.claim_expires_at < now)


_WAITED = ob.alias("waited")


def _waits_for(column: sa.ColumnElement[Any]) -> sa.ColumnElement[bool]:
    """The row named by `column` exists, is not given up, and has no ts yet."""
    other = _WAITED  # one alias for every query: SQLAlchemy caches the compiled statement
    return sa.exists().where(other.c.key == column, other.c.ts.is_(None), other.c.state == PENDING)


def due(now: Any) -> sa.ColumnElement[bool]:
    return sa.and_(
        ob.c.state == PENDING,
        ob.c.next_attempt_at <= now,
        claim_free(now),
        sa.or_(ob.c.expires_at.is_(None), ob.c.expires_at > now),
        ~_waits_for(ob.c.thread_key),
        ~_waits_for(ob.c.after_key),
    )


def held(key: Any, claim: Any) -> sa.ColumnElement[bool]:
    if claim is None:
        return ob.c.key == key  # type: ignore[no-any-return]
    return sa.and_(ob.c.key == key, ob.c.claim_token == claim)


def aware(value: Any) -> datetime:
    """min() over a SQLite column loses its type (naive UTC text); PostgreSQL keeps it."""
    at = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def insert_ignore_key(db: Database, table: sa.Table = ob, key: str = "key") -> Any:
    return insert_ignore(db, table).on_conflict_do_nothing(index_elements=[key])


def due_in(row: Any, now: datetime) -> float | None:
    """Seconds until a put row may be claimed; None while a live claim holds it."""
    if row.claim_expires_at is not None and aware(row.claim_expires_at) >= now:
        return None
    return max(0.0, (aware(row.next_attempt_at) - now).total_seconds())


@dataclass(frozen=True)
class Stored:
    """What a put wrote: the row's version (0: nothing) and `due_in` (see that function)."""

    version: int
    due_in: float | None


@dataclass(frozen=True)
class Put:
    """One `Outbox.put`'s arguments."""

    key: str
    target: dict[str, Any]
    body: dict[str, Any]
    expires_in: float | None
    delay: float
    only: str | None
    run: str | None = None
    """Put only while this run is running (`while_running`)."""
    fresh: bool = False
    """The row is most likely new: its insert is tried first (one statement, not two)."""


CARD_UPDATES_FIRST = sa.case((sa.and_(ob.c.key.like("card:%"), ob.c.ts.is_not(None)), 0), else_=1)
"""0 for the update of a posted card (a decision shown), else 1: claims take those first."""


def next_due_columns(now: Any) -> tuple[Any, Any]:
    """The next retry time of a free pending row, and the first end of a claim holding one
    (scalar subqueries over their own alias: a claim reads them with its rows; `now`: a time
    or a bind parameter)."""
    other = ob.alias("pending_rows")
    free = claim_free(now, other)
    pending = other.c.state == PENDING
    next_free = (
        sa.select(sa.func.min(other.c.next_attempt_at))
        .where(pending, free, other.c.next_attempt_at > now)
        .scalar_subquery()
    )
    next_end = (
        sa.select(sa.func.min(other.c.claim_expires_at))
        .where(pending, sa.not_(free))
        .scalar_subquery()
    )
    return next_free.label("next_free"), next_end.label("next_end")


def seconds_until(times: list[Any], now: datetime) -> float | None:
    known = [aware(at) for at in times if at is not None]
    if not known:
        return None
    return max(0.0, (min(known) - now).total_seconds())
