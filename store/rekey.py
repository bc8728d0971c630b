"""`sayso db reencrypt`: every encrypted column rewritten with the first key.

Values are read raw (past the encrypting column types): tokens are re-encrypted with
MultiFernet.rotate, plaintext written before a key was set is encrypted."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from store import crypto
from store.db import Database
from store.schema import (
    api_keys,
    api_requests,
    approval_requests,
    audit_events,
    runs,
    slack_intake,
    slack_outbox,
    webhook_deliveries,
)

log = logging.getLogger("sayso.store")

ENCRYPTED_COLUMNS: dict[sa.Table, tuple[str, ...]] = {
    runs: ("state", "request_text"),
    approval_requests: ("arguments", "edited_arguments", "output", "reason", "api_spec"),
    audit_events: ("detail",),
    api_keys: ("webhook_secret",),
    api_requests: ("callback_url",),
    webhook_deliveries: ("url",),
    slack_intake: ("payload",),
    slack_outbox: ("payload",),
}


def _raw_type(column: sa.Column[Any]) -> sa.types.TypeEngine[Any]:
    return sa.Text() if isinstance(column.type, crypto.EncryptedText) else sa.JSON()


def _rekeyed(cipher: crypto.Cipher, value: Any, text: bool) -> Any:
    """The value encrypted with the first key (None: leave it). Raises EncryptionKeyError
    when no key reads it."""
    if value is None:
        return None
    if text:
        if crypto.is_encrypted_text(value):
            return crypto.TEXT_PREFIX + cipher.rotate(value[len(crypto.TEXT_PREFIX) :])
        return crypto.TEXT_PREFIX + cipher.encrypt(crypto.unescaped_text(value))
    if crypto.is_encrypted_json(value):
        return {crypto.JSON_KEY: cipher.rotate(value[crypto.JSON_KEY])}
    return {crypto.JSON_KEY: cipher.encrypt(crypto.json_text(crypto.unescaped_json(value)))}


@dataclass
class Rekeyed:
    changed: int = 0
    """Values rewritten with the first key."""
    unreadable: int = 0
    """Values no key reads: logged and left as they are."""


def _row_values(
    cipher: crypto.Cipher, table: sa.Table, columns: list[sa.Column[Any]], row: Any, out: Rekeyed
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for c in columns:
        try:
            new = _rekeyed(cipher, row._mapping[c.name], _is_text(c))
        except crypto.EncryptionKeyError:
            out.unreadable += 1
            log.warning(
                "event=reencrypt_unreadable table=%s column=%s key=%s: no key in "
                "SAYSO_ENCRYPTION_KEYS reads it; left as it is",
                table.name,
                c.name,
                row.key,
            )
            continue
        if new is not None:
            values[c.name] = sa.literal(new, _raw_type(c))
    return values


async def reencrypt(db: Database, batch: int) -> int:
    """Rewrite every encrypted column with the first key; the number of values rewritten.
    Each batch is read `FOR UPDATE` (PostgreSQL; SQLite's write transaction is exclusive) in
    the transaction that rewrites it, so a concurrent save is never overwritten with the
    value read before it. A value no key reads is logged and skipped."""
    return (await reencrypt_report(db, batch)).changed


async def reencrypt_report(db: Database, batch: int) -> Rekeyed:
    cipher = crypto.cipher_of(db.engine.dialect)
    if cipher is None:
        raise crypto.EncryptionKeyError(
            "SAYSO_ENCRYPTION_KEYS is not set: set it (new key first) to re-encrypt."
        )
    out = Rekeyed()
    for table, names in ENCRYPTED_COLUMNS.items():
        columns = [table.c[n] for n in names]
        raw = [sa.type_coerce(c, _raw_type(c)).label(c.name) for c in columns]
        (key,) = table.primary_key.columns  # every table here has a one-column key
        after: Any = None
        while True:
            query = sa.select(key.label("key"), *raw).order_by(key).limit(batch)
            if after is not None:
                query = query.where(key > after)
            async with db.write() as conn:
                rows = (await conn.execute(query.with_for_update())).all()
                if rows and pause_between_read_and_write is not None:
                    await pause_between_read_and_write()
                for row in rows:
                    values = _row_values(cipher, table, columns, row, out)
                    if values:
                        await conn.execute(table.update().where(key == row.key).values(**values))
                        out.changed += len(values)
            if len(rows) < batch:
                break
            after = rows[-1].key
    return out


pause_between_read_and_write: Callable[[], Awaitable[None]] | None = None
"""Tests only: awaited inside each batch's transaction, between reading and rewriting."""


def _is_text(column: sa.Column[Any]) -> bool:
    return isinstance(column.type, crypto.EncryptedText)
