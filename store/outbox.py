"""The Slack outbox: what sayso shows in Slack is a row before it is sent (issue 22).

Design (docs/architecture-outbox.md has the long form)

- **One row per logical Slack message**, keyed by a stable key the caller chooses:
  `card:{request_id}`, `root:{run_id}`, `answer:{run_id}:{part}`, `home:{team}:{user}`,
  `ephemeral:{uuid}`. The row holds the target (channel, thread_ts, or `thread_key`: the thread
  is another row's message; user for views.publish and ephemerals), the kind (`message`,
  `ephemeral`, `home`, `stream`), the latest desired payload (Web API arguments: text, blocks,
  metadata, view, markdown_text...) with its `version`, the `sent_version`, the Slack `ts` once
  posted, attempts, `next_attempt_at`, an optional `expires_at`, and a claim (token + expiry).
- **Latest state wins.** `put` on a row not yet sent replaces its payload; on a row already
  posted it bumps `version`, so the dispatcher sends one `chat.update` with the latest payload
  however many puts came meanwhile. A row is `pending` while `version > sent_version`.
- **Claims.** `claim_due` takes due rows nobody holds (PostgreSQL: `FOR UPDATE SKIP LOCKED`),
  oldest first, and marks them claimed with a token and an expiry: one dispatcher per row at a
  time, so the versions of one message go out in order. `after_key` / `thread_key` hold a row
  back until the row it follows has its `ts`.
- **No double posts.** Posting is the only call that is not idempotent. The claim of a row
  without `ts` sets `unsure` in the same committed transaction, before any HTTP. `mark_sent`
  (the post's ts) and `mark_failed(maybe_sent=False)` (Slack certainly did nothing: a 429, an
  error answer, a refused connection, a 503) clear it. A crash, a timeout or a torn connection
  leaves it set, and whoever claims the row next (any replica, once the claim expired) must
  first look for a message carrying `metadata.event_payload.key == key` in the thread or
  channel (the dispatcher posts every message with that metadata) and adopt its ts instead of
  posting again. A dispatcher never starts a call unless its claim outlives the call's timeout
  (plus a margin), so no two dispatchers can have a post of the same row in flight.
- **Expiry.** Ephemerals and response_url answers carry `expires_at`: past it they are dropped
  (state `dropped`), never sent late.
- **Wake.** `put` notifies `sayso_outbox` (PostgreSQL, in the put's transaction) and the
  in-process subscribers, so a dispatcher sends at once; its sweep is the safety net.
- **One sender.** `hold_sender` is a lease in `slack_senders`: Slack's limits are per
  workspace, so one dispatcher at a time paces them exactly; a standby takes over when the
  lease lapses (the row claims above still make every row go out once during a hand-over).

Here: `put`, `claim` and the wake-ups; the marks of a claimed row are in store/outbox_marks.py,
the reads, the upkeep and the sender lease in store/outbox_reads.py (`Outbox` inherits both).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.agent.util import utcnow
from store import outbox_sql as sql
from store.db import Database
from store.notify import ChannelListener
from store.outbox_marks import OutboxMarks
from store.outbox_reads import OutboxReads
from store.outbox_rows import (
    DROPPED,
    FAILED,
    KINDS,
    PENDING,
    SENT,
    OutboxRow,
    Put,
    Stored,
    due_in,
    outbox_row,
    seconds_until,
)
from store.schema import slack_outbox as ob

log = logging.getLogger("sayso.store")

Admit = Callable[[OutboxRow], "float | None"]
"""A claim's filter: None takes the due row; seconds: leave it, due again after them."""

CHANNEL = "sayso_outbox"
"""PostgreSQL NOTIFY channel: an outbox row became due (the payload is its key)."""


class Outbox(OutboxMarks, OutboxReads):
    """The outbox repository: `put` desired states; dispatchers `claim_due` and mark them."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._subscribers: list[Callable[[str | None, float], None]] = []
        self.sender_here: Callable[[], bool] = _nobody
        """True while this process's own dispatcher is the one sending: a put wakes it in
        process and needs no NOTIFY (the others would only wake to stand by)."""

    # -- writers (the presenter) ------------------------------------------------------------

    async def put(
        self,
        key: str,
        *,
        kind: str = "message",
        channel: str | None = None,
        thread_ts: str | None = None,
        thread_key: str | None = None,
        after: str | None = None,
        user: str | None = None,
        team: str | None = None,
        text: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        payload: dict[str, Any] | None = None,
        expires_in: float | None = None,
        delay: float = 0.0,
        only: str | None = None,
        while_running: str | None = None,
        fresh: bool = False,
        conn: AsyncConnection | None = None,
    ) -> int:
        """Set the latest desired state of `key`; returns its version (0: nothing written,
        see `only`).

        `payload` holds the Web API arguments (text and blocks may be given on their own);
        `thread_key` names the row whose message is the thread, `after` a row that must be
        posted first. `expires_in` (seconds) drops the row when it could not be sent in
        time. `delay` holds a row that had nothing pending for that long (a debounce: puts
        arriving meanwhile coalesce); a row already pending keeps its time. `only="new"`
        writes only a row that does not exist yet (a card is put once), `only="existing"`
        only one that does (an update of a message that may never have been shown). With
        `conn`, the put joins the caller's transaction (the caller wakes the dispatcher:
        `wake(key)`). `while_running` (a run's id): only an existing row, and only while that
        run is running (a state held a while, which a newer one from elsewhere may replace).
        `fresh`: the row is most likely new (its insert is tried first)."""
        if kind not in KINDS:
            raise ValueError(f"unknown outbox kind {kind!r} (one of {', '.join(KINDS)})")
        body = {**(payload or {}), **_given(text=text, blocks=blocks)}
        target = {
            "kind": kind,
            "team_id": team,
            "channel": channel,
            "thread_ts": thread_ts,
            "thread_key": thread_key,
            "after_key": after,
            "user_id": user,
        }
        if while_running is not None:
            only = "existing"
        put = Put(key, target, body, expires_in, delay, only, while_running, fresh)
        if conn is not None:
            return (await self._put(conn, put)).version
        async with self.db.write(single=True) as own:  # each statement is sound on its own
            stored = await self._put(own, put)
            wake_in = stored.due_in if stored.version else None  # None: nobody to wake
            if wake_in is not None:
                await self._notify(own, key)
        if wake_in is not None:
            self._wake_local(key, wake_in)
        return stored.version

    async def _put(self, conn: AsyncConnection, put: Put) -> Stored:
        """One statement in the common case: the update of an existing row (its new version
        returned), else the insert of a new one. Also says when the row is due: a row a
        dispatcher holds (its send in flight) wakes nobody, its holder sends the new version
        once it records the old one (`Marked.PENDING`)."""
        now = utcnow()
        expires = now + timedelta(seconds=put.expires_in) if put.expires_in is not None else None
        due_at = now + timedelta(seconds=put.delay)
        if put.fresh and put.only is None:
            return await self._insert(conn, replace(put, fresh=False), now, due_at, expires)
        if put.only != "new":
            named = frozenset(c for c, v in put.target.items() if v is not None and c != "kind")
            statement = sql.put_update(named, expires is not None, put.run is not None)
            params = sql.put_params(put.key, put.body, put.target, now=now, next=due_at)
            params["p_expires"] = expires
            if put.run is not None:
                params["p_run"] = put.run
            updated = (await conn.execute(statement, params)).first()
            if updated is not None:
                return Stored(int(updated.version), due_in(updated, now))
            if put.only == "existing":
                return Stored(0, None)
        return await self._insert(conn, put, now, due_at, expires)

    async def _insert(
        self,
        conn: AsyncConnection,
        put: Put,
        now: datetime,
        due_at: datetime,
        expires: datetime | None,
    ) -> Stored:
        params = sql.put_params(
            put.key, put.body, put.target, now=now, next=due_at, expires=expires
        )
        inserted = await conn.execute(sql.put_insert(self.db.dialect), params)
        if inserted.rowcount == 1:
            return Stored(1, put.delay)
        if put.only == "new":
            return Stored(0, None)
        return await self._put(conn, put)  # raced with another insert: update it

    # -- the dispatcher -----------------------------------------------------------------------

    async def claim_due(
        self,
        owner: str,
        limit: int = 20,
        now: datetime | None = None,
        *,
        lease_seconds: float = 60.0,
    ) -> list[OutboxRow]:
        """Claim up to `limit` due rows (see `claim`)."""
        rows, _ = await self.claim(owner, limit, now, lease_seconds=lease_seconds)
        return rows

    async def claim(
        self,
        owner: str,
        limit: int = 20,
        now: datetime | None = None,
        *,
        lease_seconds: float = 60.0,
        admit: Admit | None = None,
    ) -> tuple[list[OutboxRow], float | None]:
        """Claim up to `limit` due rows, oldest first in each channel, the channels in turn
        (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so dispatchers claiming at once take different
        rows), in one transaction. A claimed row without a ts is marked `unsure` in it, before
        anything is sent. The claim's fresh token is the fencing token of `mark_*`; `owner`
        is logged only.

        Also returns, when fewer than `limit` rows were due, the seconds until the next row
        nobody holds becomes due (None: none is waiting for a time), so a dispatcher knows
        how long it may sleep without polling.

        `admit(row)`: None to take a due row, or the seconds after which it should come back
        (the dispatcher's pacing: a row Slack's limits would hold back is left unclaimed and
        due again then, in the same transaction, instead of claimed and handed back)."""
        if limit <= 0:
            return [], None
        now = now or utcnow()
        expires = now + timedelta(seconds=lease_seconds)
        query = sql.claim_rows(self.db.is_postgres)  # the order: see there
        token = uuid.uuid4().hex  # one claim, one token: each row's fencing token
        claimed: list[OutboxRow] = []
        next_due: float | None = None
        async with self.db.write() as conn:
            rows = (await conn.execute(query, {"p_now": now, "p_limit": limit})).all()
            taken = await self._defer_refused(conn, rows, admit, now) if admit else rows
            if taken:
                claimed = await self._take(conn, taken, token, now, expires)
            if rows and len(rows) < limit:
                next_due = seconds_until([rows[0].next_free, rows[0].next_end], now)
            elif not rows:
                next_due = await self._next_due(conn, now)
        if claimed:
            log.debug("event=outbox_claimed owner=%s rows=%d", owner, len(claimed))
        return claimed, next_due

    @staticmethod
    async def _defer_refused(
        conn: AsyncConnection, rows: Sequence[Any], admit: Admit, now: datetime
    ) -> list[Any]:
        """The rows `admit` takes; the others are made due again when it says (one
        statement for all of them)."""
        taken: list[Any] = []
        deferred: list[dict[str, Any]] = []
        for r in rows:
            retry_in = admit(outbox_row(r._mapping))
            if retry_in is None:
                taken.append(r)
            else:
                retry_at = now + timedelta(seconds=max(0.0, retry_in))
                deferred.append({"p_key": r.key, "p_retry_at": retry_at, "p_now": now})
        if deferred:
            await conn.execute(sql.defer_rows(), deferred)
        return taken

    async def _take(
        self,
        conn: AsyncConnection,
        rows: Sequence[Any],
        token: str,
        now: datetime,
        expires: datetime,
    ) -> list[OutboxRow]:
        """Mark the selected rows claimed with `token`, in one statement; returns those this
        claim holds (all of them: the rows are locked on PostgreSQL, and on SQLite this
        transaction is the one writer; `RETURNING` says so rather than assuming it)."""
        threads = await self._thread_ts(conn, [r.thread_key for r in rows if r.thread_key])
        params = {"p_keys": [r.key for r in rows], "p_now": now, "p_claim": token}
        taken = await conn.scalars(sql.take_rows(), {**params, "p_expires": expires})
        held_keys = set(taken.all())
        claimed: list[OutboxRow] = []
        for r in rows:
            if r.key not in held_keys:
                continue
            m = dict(r._mapping)
            m.update(claim_token=token, claim_expires_at=expires)
            # `unsure` as it was before this claim: did an earlier attempt maybe post?
            claimed.append(outbox_row(m, threads.get(r.thread_key or "")))
        return claimed

    @staticmethod
    async def _next_due(conn: AsyncConnection, now: datetime) -> float | None:
        """Seconds until a pending row may be due: the next retry time of a free row, or the
        end of a claim that holds one (a dispatcher that died holding rows: they are sent
        once its claim lapses, with no other wake-up to wait for)."""
        row = (await conn.execute(sql.next_due(), {"p_now": now})).one()
        return seconds_until(list(row), now)

    @staticmethod
    async def _thread_ts(conn: AsyncConnection, keys: list[str]) -> dict[str, str]:
        if not keys:
            return {}
        rows = await conn.execute(sa.select(ob.c.key, ob.c.ts).where(ob.c.key.in_(set(keys))))
        return {r.key: r.ts for r in rows if r.ts}

    # -- waking dispatchers -------------------------------------------------------------------

    def subscribe(self, on_due: Callable[[str | None, float], None]) -> Callable[[], None]:
        """Call `on_due(key, in_seconds)` after each put of this process that a dispatcher
        may claim (now, or after its debounce); returns the unsubscribe."""
        self._subscribers.append(on_due)
        return lambda: self._subscribers.remove(on_due)

    def listener(self, on_due: Callable[[str | None], None]) -> ChannelListener:
        """PostgreSQL: hear the puts of every replica (`on_due(None)` on each reconnect).
        Start it with `.start()`, stop it with `await .close()`; a no-op on SQLite."""
        return ChannelListener(
            self.db, CHANNEL, lambda key: on_due(key or None), lambda: on_due(None), what="outbox"
        )

    async def wake(self, key: str) -> None:
        """Wake dispatchers after a put made inside the caller's own transaction."""
        if self.db.is_postgres and not self.sender_here():
            async with self.db.write() as conn:
                await self._notify(conn, key)
        self._wake_local(key)

    async def _notify(self, conn: AsyncConnection, key: str) -> None:
        if self.db.is_postgres and not self.sender_here():
            await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, key)))

    def _wake_local(self, key: str, due_in: float = 0.0) -> None:
        for on_due in list(self._subscribers):
            try:
                on_due(key, due_in)
            except Exception:  # a subscriber's bug must not fail the put
                log.exception("event=outbox_wake_failed key=%s", key)


def _given(**values: Any) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


def _nobody() -> bool:
    return False


__all__ = ["CHANNEL", "DROPPED", "FAILED", "KINDS", "PENDING", "SENT", "Outbox", "OutboxRow"]
