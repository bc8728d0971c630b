"""The proxy's journal: which gated calls were asked, forwarded and answered, in a local
SQLite file, so a restarted proxy never forwards a call twice.

Why a local journal and not a mark on the request in sayso: forwarding happens here, between
two processes sayso never sees, so only the proxy knows whether it sent the call; writing
`forwarding` to a local file (one fsync'ed transaction) before sending is the write-ahead that
makes "at most once" hold across a kill at any instant, with no extra round trip to sayso and
no change to the API. Its limit: the journal is per machine (a proxy restarted on another host
starts an empty one; it still gets the same request back through the idempotency key, so no
second card, but it would forward an approved call again). A "consumed" mark through /v1 would
lift that limit; see docs/integrations.md (TODO).

Each call has a key: the proxy's name, the session, the SHA-256 of the canonical call (tool
and arguments) and its occurrence (the n-th identical call of the session). A call that was
answered to the client is `delivered`; the next identical call is the next occurrence, while a
call retried after a restart (never answered) maps onto the same key, hence the same request.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bot.receipts import canonical_json

State = Literal["requested", "forwarding", "done", "settled", "delivered"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    call_hash TEXT NOT NULL,
    occurrence INTEGER NOT NULL,
    tool TEXT NOT NULL,
    request_id TEXT,
    state TEXT NOT NULL,
    result TEXT,
    updated_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS calls_occurrence ON calls (session, call_hash, occurrence);
"""


def call_hash(tool: str, arguments: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json({"tool": tool, "arguments": arguments})).hexdigest()


@dataclass(frozen=True)
class Entry:
    key: str
    state: State
    request_id: str | None
    result: dict[str, Any] | None


class Journal:
    """One SQLite file (WAL); every write is its own committed transaction."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        self._claimed: set[tuple[str, str, int]] = set()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def claim(self, name: str, session: str, tool: str, arguments: dict[str, Any]) -> Entry:
        """This call's entry: the first occurrence of it in the session not yet answered to the
        client and not being handled by this process (created `requested` if new)."""
        digest = call_hash(tool, arguments)
        with self._tx() as db:
            occurrence = 1
            while True:
                row = db.execute(
                    "SELECT key, state, request_id, result FROM calls "
                    "WHERE session = ? AND call_hash = ? AND occurrence = ?",
                    (session, digest, occurrence),
                ).fetchone()
                mine = (session, digest, occurrence) in self._claimed
                if row is None and not mine:
                    key = _key(name, session, digest, occurrence)
                    db.execute(
                        "INSERT INTO calls VALUES (?, ?, ?, ?, ?, NULL, 'requested', NULL, ?)",
                        (key, session, digest, occurrence, tool, time.time()),
                    )
                    self._claimed.add((session, digest, occurrence))
                    return Entry(key, "requested", None, None)
                if row is not None and row[1] != "delivered" and not mine:
                    self._claimed.add((session, digest, occurrence))
                    result = json.loads(row[3]) if row[3] else None
                    return Entry(row[0], row[1], row[2], result)
                occurrence += 1

    def _set(self, key: str, **values: Any) -> None:
        columns = ", ".join(f"{k} = ?" for k in values)
        with self._tx() as db:
            db.execute(
                f"UPDATE calls SET {columns}, updated_at = ? WHERE key = ?",
                (*values.values(), time.time(), key),
            )

    def requested(self, key: str, request_id: str) -> None:
        self._set(key, request_id=request_id)

    def forwarding(self, key: str) -> None:
        """Written, and on disk, before the call is sent upstream."""
        self._set(key, state="forwarding")

    def done(self, key: str, result: dict[str, Any]) -> None:
        self._set(key, state="done", result=json.dumps(result))

    def settled(self, key: str, result: dict[str, Any]) -> None:
        """Decided without forwarding (rejected, expired, denied): the answer is kept."""
        self._set(key, state="settled", result=json.dumps(result))

    def delivered(self, key: str) -> None:
        """Answered to the client: the next identical call is a new one."""
        self._set(key, state="delivered")
        with self._tx() as db:
            row = db.execute(
                "SELECT session, call_hash, occurrence FROM calls WHERE key = ?", (key,)
            ).fetchone()
        if row is not None:
            self._claimed.discard((row[0], row[1], row[2]))

    def release(self, key: str) -> None:
        """This process stops handling the call (the client cancelled it): a retry takes it."""
        row = self._db.execute(
            "SELECT session, call_hash, occurrence FROM calls WHERE key = ?", (key,)
        ).fetchone()
        if row is not None:
            self._claimed.discard((row[0], row[1], row[2]))

    def state(self, key: str) -> State | None:
        row = self._db.execute("SELECT state FROM calls WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None


def _key(name: str, session: str, digest: str, occurrence: int) -> str:
    material = f"{name}\n{session}\n{digest}\n{occurrence}".encode()
    return f"proxy:{name}:{hashlib.sha256(material).hexdigest()[:40]}"[:200]


def default_path() -> Path:
    """`$XDG_STATE_HOME/sayso/proxy-journal.db` (~/.local/state/sayso/...)."""
    import os

    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "sayso" / "proxy-journal.db"
