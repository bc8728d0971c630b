"""An API request's create on SQLite and PostgreSQL (one statement there, store/api_insert.py):
the records it answers with are the ones a read gives back, every row is written, and an
idempotency key used twice at once stores one request."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from store import Store
from store import api as api_ops
from store.api import NewApiRequest
from store.schema import api_requests, audit_events, request_approvers


def _new(**overrides: Any) -> NewApiRequest:
    values: dict[str, Any] = dict(
        key_name="agents",
        kind="approval",
        tool_name="refund",
        title="Refund order 7731",
        arguments={"order": 7731, "amount": 12.5},
        spec={"description": "Refund", "min_approvals": 2},
        channel_id="C1",
        thread_ts=None,
        requester="U_REQ",
        approvers=["U_B", "U_A", "U_B"],
        allow_self_approval=False,
        expires_at=datetime.now(UTC) + timedelta(hours=1),
        idempotency_key=None,
        callback_url="https://agents.example/hook?token=abc",
    )
    values.update(overrides)
    return NewApiRequest(**values)


async def test_a_create_answers_with_the_records_a_read_gives_back(store: Store) -> None:
    stored = await api_ops.create_request(store.db, _new())
    assert stored.created
    request = await store.requests.get(stored.request.id)
    run = await store.runs.get(stored.run.id)
    assert request == stored.request
    assert run is not None
    assert dataclasses.asdict(run) == dataclasses.asdict(stored.run)
    assert stored.request.policy.approvers == ("U_A", "U_B")
    assert (run.status, run.pause_seq, run.agent_id) == ("waiting_for_human", 1, "api:agents")
    async with store.db.read() as conn:
        approvers = (
            await conn.execute(
                sa.select(request_approvers.c.principal).where(
                    request_approvers.c.request_id == request.id
                )
            )
        ).scalars()
        link = (
            await conn.execute(
                sa.select(api_requests).where(api_requests.c.request_id == request.id)
            )
        ).one()
        actions = (
            await conn.execute(
                sa.select(audit_events.c.action).where(audit_events.c.request_id == request.id)
            )
        ).scalars()
        assert sorted(approvers) == ["U_A", "U_B"]
        assert (link.key_name, link.callback_url) == (
            "agents",
            "https://agents.example/hook?token=abc",
        )
        assert list(actions) == ["api_request"]


async def test_one_idempotency_key_sent_twice_at_once_stores_one_request(store: Store) -> None:
    new = _new(idempotency_key="refund-7731", approvers=[])
    first, second = await asyncio.gather(
        api_ops.create_request(store.db, new), api_ops.create_request(store.db, new)
    )
    assert first.request.id == second.request.id
    assert sorted([first.created, second.created]) == [False, True]
    assert first.request == second.request
    assert first.request.policy.approvers == ()  # anyone
    async with store.db.read() as conn:
        count = (await conn.execute(sa.select(sa.func.count()).select_from(api_requests))).scalar()
    assert count == 1
