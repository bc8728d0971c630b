"""The outbox's hot statements, built once (store/outbox.py has the design).

Building a SQLAlchemy statement is most of what running it costs the bot: a put's `UPDATE`
took about 0.3 ms of CPU to build and key for the compiled cache, each time, and a decision
makes about six puts, a claim and two marks. These statements are built once per shape with
bind parameters (`p_…`) and keep their cache key, so each execution only binds values.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa

from store.db import insert_ignore_for, param
from store.outbox_rows import (
    CARD_UPDATES_FIRST,
    FAILED,
    PENDING,
    SENT,
    claim_free,
    due,
    held,
    next_due_columns,
)
from store.schema import runs
from store.schema import slack_outbox as ob

TARGETS = ("team_id", "channel", "thread_ts", "thread_key", "after_key", "user_id")
"""A put's target columns besides `kind` (fixed once the row's message is posted)."""


NOW = param("now", ob.c.updated_at)
KEY = param("key", ob.c.key)
CLAIM = param("claim", ob.c.claim_token)


@functools.cache
def put_update(
    targets: frozenset[str], with_expiry: bool, while_running: bool = False
) -> sa.Update:
    """The update of an existing row by a put naming `targets` (params: p_key, p_payload,
    p_now, p_next: its due time when nothing was pending, p_expires, p_<target>);
    `while_running`: only while the run p_run is running (else no row)."""
    idle = ob.c.state != PENDING  # nothing was pending: due at p_next
    values: dict[str, Any] = {
        "payload": param("payload", ob.c.payload),
        "version": ob.c.version + 1,
        "state": PENDING,
        "updated_at": NOW,
        "last_error": None,
        "next_attempt_at": sa.case(
            (idle, param("next", ob.c.next_attempt_at)), else_=ob.c.next_attempt_at
        ),
        "attempts": sa.case((idle, 0), else_=ob.c.attempts),
        "pending_since": sa.case((idle, NOW), else_=ob.c.pending_since),
    }
    if with_expiry:
        values["expires_at"] = param("expires", ob.c.expires_at)
    for column in sorted(targets):  # fixed once posted; before, a put moves it
        values[column] = sa.case(
            (ob.c.ts.is_(None), param(column, ob.c[column])), else_=ob.c[column]
        )
    statement = ob.update().where(ob.c.key == KEY)
    if while_running:
        statement = statement.where(
            sa.exists().where(runs.c.id == param("run", runs.c.id), runs.c.status == "running")
        )
    return statement.values(**values).returning(
        ob.c.version, ob.c.next_attempt_at, ob.c.claim_expires_at
    )


@functools.cache
def put_insert(dialect: str) -> Any:
    """The insert of a new row, ignored when the key exists (params: p_key, p_payload, p_now,
    p_next, p_expires, p_kind, p_<target>)."""
    values: dict[str, Any] = {
        "key": KEY,
        "state": PENDING,
        "payload": param("payload", ob.c.payload),
        "version": 1,
        "sent_version": 0,
        "progress": 0,
        "unsure": False,
        "attempts": 0,
        "next_attempt_at": param("next", ob.c.next_attempt_at),
        "expires_at": param("expires", ob.c.expires_at),
        "created_at": NOW,
        "updated_at": NOW,
        "pending_since": NOW,
        "kind": param("kind", ob.c.kind),
    }
    values.update({column: param(column, ob.c[column]) for column in TARGETS})
    return (
        insert_ignore_for(dialect, ob)
        .values(**values)
        .on_conflict_do_nothing(index_elements=["key"])
    )


def put_params(
    key: str, payload: dict[str, Any], target: dict[str, Any], **times: Any
) -> dict[str, Any]:
    params = {"p_key": key, "p_payload": payload, **{"p_" + k: v for k, v in times.items()}}
    params.update({"p_" + column: value for column, value in target.items()})
    return params


@functools.cache
def claim_rows(postgres: bool) -> sa.Select[Any]:
    """Due rows in claim order, with the next due times (params: p_now, p_limit): channels
    take turns (each one's oldest due row first, then each one's second, ...: a burst in one
    channel, paced at Slack's 1 a second there, never holds the others) and the update of a
    card (a decision shown) before any other row, so under Slack's limits its share of
    chat.update's budget goes to what people act on."""
    order = (CARD_UPDATES_FIRST, ob.c.next_attempt_at, ob.c.created_at)
    held = _held_by_channel()
    turn = sa.func.row_number().over(partition_by=ob.c.channel, order_by=order)
    turns = (
        sa.select(ob.c.key, (turn + sa.func.coalesce(held.c.held, 0)).label("turn"))
        .select_from(ob.outerjoin(held, held.c.channel == ob.c.channel))
        .where(due(NOW))
        .subquery()
    )
    query = (
        sa.select(ob, *next_due_columns(NOW))
        .join(turns, turns.c.key == ob.c.key)
        .order_by(order[0], turns.c.turn, *order[1:])
        .limit(sa.bindparam("p_limit", type_=sa.Integer()))
    )
    if postgres:
        query = query.with_for_update(skip_locked=True, of=ob)
    return query


def _held_by_channel() -> sa.Subquery:
    """Rows claimed (sent, or waiting for their pace) per channel: they count as that
    channel's turns already under way. Without them a burst's channels, each with a row
    waiting for Slack's one post a second there, kept a new channel's first row (someone
    else's root message) behind their next rows, oldest first. (Behind a burst of 300
    commands on SQLite the new command's root still took 1.3-1.6 s with this alone: that wait
    was in the fair turns before the run's start, bot/service/fair.py.)"""
    other = ob.alias("held_rows")
    return (
        sa.select(other.c.channel, sa.func.count().label("held"))
        .where(other.c.state == PENDING, sa.not_(claim_free(NOW, other)))
        .group_by(other.c.channel)
        .subquery("held")
    )


@functools.cache
def take_rows() -> sa.Update:
    """Mark the selected rows claimed (params: p_keys, p_now, p_claim, p_expires)."""
    may_post = sa.and_(ob.c.ts.is_(None), ob.c.kind.in_(("message", "stream")))
    return (
        ob.update()
        .where(ob.c.key.in_(sa.bindparam("p_keys", expanding=True)), claim_free(NOW))
        .values(
            claim_token=CLAIM,
            claim_expires_at=param("expires", ob.c.claim_expires_at),
            unsure=sa.case((sa.or_(ob.c.unsure, may_post), sa.true()), else_=sa.false()),
        )
        .returning(ob.c.key)
    )


@functools.cache
def defer_rows() -> sa.Update:
    """Rows a claim left for their pace come back at their slot (params, per row: p_key,
    p_retry_at, p_now); like a hand-back (`mark_failed`), without a claim to give back."""
    return (
        ob.update()
        .where(ob.c.key == KEY, ob.c.state == PENDING, claim_free(NOW))
        .values(
            next_attempt_at=param("retry_at", ob.c.next_attempt_at),
            last_error="paced",
            updated_at=NOW,
        )
    )


@functools.cache
def next_due() -> sa.Select[Any]:
    """The next due times alone (param: p_now), for a claim that found no row."""
    return sa.select(*next_due_columns(NOW))


_AWAITING = ob.alias("awaiting")


def awaited(key: Any) -> sa.Exists:
    """Do pending rows wait for the message of row `key` (in its thread, or after it)?"""
    waits = sa.or_(_AWAITING.c.thread_key == key, _AWAITING.c.after_key == key)
    return sa.exists().where(_AWAITING.c.state == PENDING, waits)


@functools.cache
def mark_sent(postgres: bool, with_claim: bool, with_ts: bool, with_progress: bool) -> sa.Update:
    """A version reached Slack (params: p_key, p_claim, p_version, p_now, p_ts, p_progress);
    returns the row's state (pending: a newer version was put meanwhile) and, with a ts on
    PostgreSQL, `awaited` (see `awaited`; SQLite asks apart: SQLAlchemy writes the columns
    of a subquery in SQLite's RETURNING without their table)."""
    version = sa.bindparam("p_version", type_=sa.Integer())
    greatest = sa.func.greatest if postgres else sa.func.max
    values: dict[str, Any] = {
        "sent_version": greatest(ob.c.sent_version, version),
        "state": sa.case((ob.c.version > version, PENDING), else_=SENT),
        "next_attempt_at": NOW,
        "claim_token": None,
        "claim_expires_at": None,
        "unsure": False,
        "attempts": 0,
        "last_error": None,
        "updated_at": NOW,
    }
    if with_ts:
        values["ts"] = sa.func.coalesce(ob.c.ts, param("ts", ob.c.ts))
    if with_progress:
        values["progress"] = param("progress", ob.c.progress)
    returned: list[Any] = [ob.c.state]
    if with_ts and postgres:
        returned.append(awaited(ob.c.key).label("awaited"))
    return (
        ob.update()
        .where(held(KEY, CLAIM if with_claim else None))
        .values(**values)
        .returning(*returned)
    )


@functools.cache
def mark_failed(with_claim: bool, count: bool, give_up: bool) -> sa.Update:
    """An attempt failed (params: p_key, p_claim, p_now, p_error, p_unsure, p_retry_at)."""
    values: dict[str, Any] = {
        "claim_token": None,
        "claim_expires_at": None,
        "last_error": param("error", ob.c.last_error),
        "updated_at": NOW,
        "unsure": param("unsure", ob.c.unsure),
    }
    if count:
        values["attempts"] = ob.c.attempts + 1
    if give_up:
        values["state"] = FAILED
    else:
        values["next_attempt_at"] = param("retry_at", ob.c.next_attempt_at)
    return ob.update().where(held(KEY, CLAIM if with_claim else None)).values(**values)
