"""`sayso db reencrypt`: every encrypted column rewritten with the first key.

Values are read raw (past the encrypting column types): tokens are re-encrypted with
MultiFernet.rotate, plaintext written before a key was set is encrypted."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from store import crypto
from store.db import Database
from store.schema import (
    api_keys,
    approval_requests,
    audit_events,
    runs,
    slack_intake,
    slack_outbox,
)

ENCRYPTED_COLUMNS: dict[sa.Table, tuple[str, ...]] = {
    runs: ("state",),
    approval_requests: ("arguments", "edited_arguments", "output", "reason"),
    audit_events: ("detail",),
    api_keys: ("webhook_secret",),
    slack_intake: ("payload",),
    slack_outbox: ("payload",),
}


def _raw_type(column: sa.Column[Any]) -> sa.types.TypeEngine[Any]:
    return sa.Text() if isinstance(column.type, crypto.EncryptedText) else sa.JSON()


def _rekeyed(cipher: crypto.Cipher, value: Any, text: bool) -> Any:
    """The value encrypted with the first key (None: leave it)."""
    if value is None:
        return None
    if text:
        if crypto.is_encrypted_text(value):
            return crypto.TEXT_PREFIX + cipher.rotate(value[len(crypto.TEXT_PREFIX) :])
        return crypto.TEXT_PREFIX + cipher.encrypt(value)
    if crypto.is_encrypted_json(value):
        return {crypto.JSON_KEY: cipher.rotate(value[crypto.JSON_KEY])}
    return {crypto.JSON_KEY: cipher.encrypt(crypto.json_text(value))}


async def reencrypt(db: Database, batch: int) -> int:
    cipher = crypto.cipher_of(db.engine.dialect)
    if cipher is None:
        raise crypto.EncryptionKeyError(
            "SAYSO_ENCRYPTION_KEYS is not set: set it (new key first) to re-encrypt."
        )
    changed = 0
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
                rows = (await conn.execute(query)).all()
                for row in rows:
                    values = {
                        c.name: sa.literal(new, _raw_type(c))
                        for c in columns
                        if (new := _rekeyed(cipher, row._mapping[c.name], _is_text(c))) is not None
                    }
                    if values:
                        await conn.execute(table.update().where(key == row.key).values(**values))
                        changed += len(values)
            if len(rows) < batch:
                break
            after = rows[-1].key
    return changed


def _is_text(column: sa.Column[Any]) -> bool:
    return isinstance(column.type, crypto.EncryptedText)
