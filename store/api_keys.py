"""The approval API's keys: a hashed token, the channels it may post in, its quota and its
own approval policy (`sayso keys ...`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from bot.agent.util import utcnow
from store.db import Database, param
from store.schema import api_keys


def key_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class KeyPolicy:
    """What the operator set on a key (None: not set, the defaults apply)."""

    approvers: tuple[str, ...] | None = None
    min_approvals: int | None = None
    allow_self_approval: bool | None = None
    expires_in: int | None = None
    """Seconds: the default expiry of the key's requests, and their longest."""


@dataclass(frozen=True)
class ApiKey:
    name: str
    webhook_secret: str
    channels: tuple[str, ...]
    created_at: datetime
    revoked_at: datetime | None
    per_minute: int | None = None
    """Requests per minute this key may make (None: the default, 60)."""
    policy: KeyPolicy = KeyPolicy()  # the key's own approval policy (issue 21, finding 7)


def _key(row: Any) -> ApiKey:
    return ApiKey(
        name=row.name,
        webhook_secret=row.webhook_secret,
        channels=tuple(row.channels or ()),
        created_at=row.created_at,
        revoked_at=row.revoked_at,
        per_minute=row.per_minute,
        policy=KeyPolicy(
            approvers=tuple(row.approvers) if row.approvers else None,
            min_approvals=row.min_approvals,
            allow_self_approval=row.allow_self_approval,
            expires_in=row.expires_in,
        ),
    )


async def set_key_quota(db: Database, name: str, per_minute: int | None) -> bool:
    """Set a key's requests per minute (None: the default); False when there is no such key."""
    async with db.write() as conn:
        result = await conn.execute(
            api_keys.update().where(api_keys.c.name == name).values(per_minute=per_minute)
        )
    return result.rowcount == 1


# -- keys -------------------------------------------------------------------------------------


async def create_key(
    db: Database,
    name: str,
    token: str,
    webhook_secret: str,
    channels: list[str],
    *,
    approvers: list[str] | None = None,
    min_approvals: int | None = None,
    allow_self_approval: bool | None = None,
    expires_in: int | None = None,
) -> bool:
    """Store a key (hashed) with its own policy (None: not set); False when the name is
    taken."""
    try:
        async with db.write() as conn:
            await conn.execute(
                api_keys.insert().values(
                    name=name,
                    key_hash=key_hash(token),
                    webhook_secret=webhook_secret,
                    channels=channels,
                    created_at=utcnow(),
                    approvers=approvers or None,
                    min_approvals=min_approvals,
                    allow_self_approval=allow_self_approval,
                    expires_in=expires_in,
                )
            )
    except IntegrityError:
        return False
    return True


async def list_keys(db: Database) -> list[ApiKey]:
    async with db.read() as conn:
        rows = (await conn.execute(sa.select(api_keys).order_by(api_keys.c.name))).all()
    return [_key(r) for r in rows]


async def revoke_key(db: Database, name: str) -> bool:
    async with db.write() as conn:
        result = await conn.execute(
            api_keys.update()
            .where(api_keys.c.name == name, api_keys.c.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
    return result.rowcount == 1


_KEY_BY_HASH = sa.select(api_keys).where(
    api_keys.c.key_hash == param("hash", api_keys.c.key_hash),
    api_keys.c.revoked_at.is_(None),
)
"""A live key by its token's hash (param p_hash): read with every API request."""


async def key_for_token(db: Database, token: str) -> ApiKey | None:
    """The live key this token is, or None (unknown or revoked)."""
    async with db.read() as conn:
        row = (await conn.execute(_KEY_BY_HASH, {"p_hash": key_hash(token)})).first()
    return _key(row) if row else None


async def get_key(db: Database, name: str) -> ApiKey | None:
    async with db.read() as conn:
        row = (await conn.execute(sa.select(api_keys).where(api_keys.c.name == name))).first()
    return _key(row) if row else None
