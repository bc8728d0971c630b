"""The approval API's tables: the requests callers made (keys: store/api_keys.py, re-exported).

An API request is an approval request like any other, on a run of its own: agent_id
`api:<key name>`, waiting for a human, with no saved state. Cards, App Home, expiry and the
decide path see nothing special; `ready_runs` leaves these runs out, so no runner drives them.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from bot.agent.schema_tool import API_AGENT_PREFIX
from bot.agent.util import utcnow
from bot.agent.vocabulary import PauseKind, RequestKind
from store.api_insert import NewRows, insert_rows
from store.api_keys import (
    ApiKey,
    KeyPolicy,
    create_key,
    get_key,
    key_for_token,
    key_hash,
    list_keys,
    revoke_key,
    set_key_quota,
)
from store.audit import add_audit
from store.db import Database, param
from store.records import ANYONE, ApprovalRequestRecord, RunRecord
from store.requests import _one, request_record
from store.runs import RUN_BY_ID, run_record
from store.schema import api_requests, runs
from store.schema import approval_requests as req
from store.schema import request_approvers as ra


@dataclass(frozen=True)
class NewApiRequest:
    """Everything an API request is stored with (the card is posted after)."""

    key_name: str
    kind: RequestKind
    tool_name: str
    title: str
    arguments: dict[str, Any]
    spec: dict[str, Any]
    channel_id: str
    thread_ts: str | None
    requester: str | None
    approvers: list[str]
    allow_self_approval: bool
    expires_at: datetime
    idempotency_key: str | None
    callback_url: str | None
    require_reason: bool = False
    rule: str | None = None
    """The policy file's rule that set the request's policy, if one did."""


@dataclass(frozen=True)
class ApiRequestLink:
    key_name: str
    idempotency_key: str | None
    callback_url: str | None


# -- requests ---------------------------------------------------------------------------------

_PAUSE_OF: dict[str, PauseKind] = {
    "approval": "tool_approval",
    "hitl": "tool_input",
    "review": "human_review",
}


class IdempotencyConflict(Exception):
    """An idempotency key this key used before, with a different request."""


def body_hash(new: NewApiRequest) -> str:
    """sha256 of what the request asks (everything but its deadline and idempotency key)."""
    fields = {
        "kind": new.kind,
        "tool": new.tool_name,
        "title": new.title,
        "arguments": new.arguments,
        "spec": new.spec,
        "channel": new.channel_id,
        "thread_ts": new.thread_ts,
        "requester": new.requester,
        "approvers": sorted(new.approvers),
        "allow_self_approval": new.allow_self_approval,
        "callback_url": new.callback_url,
    }
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


async def _earlier(db: Database, new: NewApiRequest, digest: str) -> str | None:
    """The earlier request of this idempotency key, if the same; IdempotencyConflict if not."""
    assert new.idempotency_key is not None
    query = sa.select(api_requests.c.request_id, api_requests.c.body_hash).where(
        api_requests.c.key_name == new.key_name,
        api_requests.c.idempotency_key == new.idempotency_key,
    )
    async with db.read() as conn:
        row = (await conn.execute(query)).first()
    if row is None:
        return None
    if row.body_hash is not None and row.body_hash != digest:
        raise IdempotencyConflict(str(row.request_id))
    return str(row.request_id)


@dataclass(frozen=True)
class StoredApiRequest:
    """What `create_request` stored (or found, for an idempotency key used before)."""

    request: ApprovalRequestRecord
    run: RunRecord
    created: bool


async def create_request(db: Database, new: NewApiRequest) -> StoredApiRequest:
    """Store the run and its one pending request (store/api_insert.py), audited (`api_request`
    by the key), in one transaction. With an idempotency key already used by this key for
    the same request, the earlier request (`created` False); for another request,
    IdempotencyConflict. None of it when the request vanished meanwhile (LookupError)."""
    request_id, created = await _create(db, new)
    if created is not None:
        return created
    found = await request_and_run(db, request_id)
    if found is None:
        raise LookupError(request_id)
    return StoredApiRequest(found[0], found[1], False)


async def _create(db: Database, new: NewApiRequest) -> tuple[str, StoredApiRequest | None]:
    # Longer than 60 lines because creating a request is one transaction (idempotent).
    digest = body_hash(new)
    if new.idempotency_key is not None:
        found = await _earlier(db, new, digest)
        if found is not None:
            return found, None
    now = utcnow()
    run_id, request_id = uuid.uuid4().hex, uuid.uuid4().hex
    principals = sorted(set(new.approvers)) or [ANYONE]
    rows = NewRows(
        run=dict(
            id=run_id,
            agent_id=API_AGENT_PREFIX + new.key_name,
            status="waiting_for_human",
            pause_kind=_PAUSE_OF[new.kind],
            pause_step=0,
            pause_seq=1,
            requester=new.requester,
            channel_id=new.channel_id,
            thread_ts=new.thread_ts,
            request_text=new.title,
            created_at=now,
            updated_at=now,
            version=1,
        ),
        request=dict(
            id=request_id,
            run_id=run_id,
            pause_seq=1,
            call_id=f"api:{request_id}",
            step=0,
            tool_name=new.tool_name,
            kind=new.kind,
            arguments=new.arguments,
            status="pending",
            channel_id=new.channel_id,
            expires_at=new.expires_at,
            requester=new.requester,
            allow_self_approval=new.allow_self_approval,
            interrupted=False,
            created_at=now,
            min_approvals=int(new.spec.get("min_approvals") or 1),
            require_reason=new.require_reason,
            rule=new.rule,
            api_spec=new.spec,
        ),
        link=dict(
            request_id=request_id,
            key_name=new.key_name,
            idempotency_key=new.idempotency_key,
            callback_url=new.callback_url,
            created_at=now,
            body_hash=digest,
        ),
        principals=principals,
    )
    try:
        async with db.write() as conn:
            run_row, request_row = await insert_rows(conn, rows)
            request = request_record(request_row, principals)
            run = run_record(run_row)
            # last: the audit chain's head stays locked from here to the commit, and every
            # audited write waits for it
            await add_audit(
                conn,
                now=now,
                actor=API_AGENT_PREFIX + new.key_name,
                action="api_request",
                run_id=run_id,
                call_id=f"api:{request_id}",
                request_id=request_id,
                tool_name=new.tool_name,
                arguments=new.arguments,
                outcome="ok",
            )
    except IntegrityError:
        if new.idempotency_key is None:
            raise
        found = await _earlier(db, new, digest)
        if found is None:
            raise
        return found, None
    return request_id, StoredApiRequest(request, run, True)


async def key_owns_thread(db: Database, key_name: str, channel_id: str, thread_ts: str) -> bool:
    """Did a request of this key start this thread (and no run of anything else live in it)?"""
    query = sa.select(runs.c.agent_id).where(
        runs.c.channel_id == channel_id, runs.c.thread_ts == thread_ts
    )
    async with db.read() as conn:
        owners = set((await conn.scalars(query)).all())
    return owners == {API_AGENT_PREFIX + key_name}


async def by_idempotency_key(db: Database, key_name: str, idempotency_key: str) -> str | None:
    query = sa.select(api_requests.c.request_id).where(
        api_requests.c.key_name == key_name, api_requests.c.idempotency_key == idempotency_key
    )
    async with db.read() as conn:
        found = await conn.scalar(query)
    return str(found) if found else None


_LINK = sa.select(api_requests).where(
    api_requests.c.request_id == param("id", api_requests.c.request_id)
)
"""An API request's key and callback (param p_id): read with each GET and webhook."""


async def link_of(db: Database, request_id: str) -> ApiRequestLink | None:
    async with db.read() as conn:
        row = (await conn.execute(_LINK, {"p_id": request_id})).first()
    if row is None:
        return None
    return ApiRequestLink(row.key_name, row.idempotency_key, row.callback_url)


async def forget_request(db: Database, request_id: str) -> None:
    """Delete a request whose card Slack refused (its run, approvers and link go with it)."""
    async with db.write() as conn:
        run_id = await conn.scalar(sa.select(req.c.run_id).where(req.c.id == request_id))
        await conn.execute(api_requests.delete().where(api_requests.c.request_id == request_id))
        await conn.execute(ra.delete().where(ra.c.request_id == request_id))
        await conn.execute(req.delete().where(req.c.id == request_id))
        if run_id is not None:
            await conn.execute(runs.delete().where(runs.c.id == run_id))


async def request_and_run(
    db: Database, request_id: str
) -> tuple[ApprovalRequestRecord, RunRecord] | None:
    async with db.read() as conn:
        request = await _one(conn, request_id)
        if request is None:
            return None
        row = (await conn.execute(RUN_BY_ID, {"p_run_id": request.spec.run_id})).first()
    return (request, run_record(row)) if row else None


async def cancel(db: Database, request_id: str, actor: str, detail: str) -> bool:
    """Cancel a pending request (exactly once); True when this call cancelled it."""
    now = utcnow()
    async with db.write() as conn:
        result = await conn.execute(
            req.update()
            .where(req.c.id == request_id, req.c.status == "pending")
            .values(status="cancelled", decided_by=actor, decided_at=now, reason=detail)
        )
        won = result.rowcount == 1
        await add_audit(
            conn,
            actor=actor,
            action="cancel",
            run_id=await conn.scalar(sa.select(req.c.run_id).where(req.c.id == request_id)),
            call_id=f"api:{request_id}",
            request_id=request_id,
            tool_name=None,
            arguments=None,
            outcome="ok" if won else "lost",
            detail=detail,
            now=now,
        )
    return won


_END_RUN = (
    runs.update()
    .where(
        runs.c.id == param("run_id", runs.c.id),
        runs.c.agent_id.like(API_AGENT_PREFIX + "%"),
        runs.c.status == "waiting_for_human",
    )
    .values(
        status=param("status", runs.c.status),
        pause_kind=None,
        updated_at=param("now", runs.c.updated_at),
        shown_version=runs.c.version,  # its card shows its end: nothing to sweep
    )
)


async def end_run(db: Database, request: ApprovalRequestRecord) -> None:
    """Once its request is settled, the API run is over (and purged in time like any run)."""
    status = "cancelled" if request.state.status in ("cancelled", "expired") else "completed"
    params = {"p_run_id": request.spec.run_id, "p_status": status, "p_now": utcnow()}
    async with db.write() as conn:
        await conn.execute(_END_RUN, params)


__all__ = [
    "API_AGENT_PREFIX",
    "ApiKey",
    "ApiRequestLink",
    "IdempotencyConflict",
    "KeyPolicy",
    "NewApiRequest",
    "StoredApiRequest",
    "create_key",
    "create_request",
    "get_key",
    "key_for_token",
    "key_hash",
    "list_keys",
    "revoke_key",
    "set_key_quota",
]
