"""The audit trail is a hash chain: `sayso audit verify` passes on a real history and names the
first broken event after a row is edited or deleted with SQL; appends stay chained when many
replicas write at once; retention keeps what remains verifiable."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import sqlalchemy as sa

from bot.agent.util import utcnow
from bot.ops.audit import verify
from store import Store
from store import audit as audit_ops
from store.schema import audit_events
from tests.ops.helpers import sayso
from tests.storage.store_helpers import StoreFactory, paused_run


async def _history(store: Store) -> None:
    """Runs paused, decided (won and lost), cancelled, and denials: what a day leaves behind."""
    for i in range(4):
        await paused_run(store, f"r{i}", approvers=["U_OPS"])
        (request,) = await store.requests.for_run(f"r{i}")
        status = "approved" if i % 2 == 0 else "rejected"
        await store.requests.decide(request.id, actor="U_OPS", status=status, reason=f"because {i}")
        await store.requests.decide(request.id, actor="U_LATE", status="approved")
    await store.audit.record(actor="U_GUEST", action="decide", outcome="denied", detail="a guest")
    await store.runs.cancel("r1", actor="U_ADMIN", detail="stop")


async def _ids(store: Store) -> list[int]:
    async with store.db.read() as conn:
        return list((await conn.scalars(sa.select(audit_events.c.id).order_by("id"))).all())


async def test_verify_passes_on_a_real_history_and_names_an_edited_event(
    store: Store, db_url: str
) -> None:
    await _history(store)
    code, out, err = await sayso(db_url, "audit", "verify")
    assert code == 0, err
    assert "audit chain ok" in out
    ids = await _ids(store)
    assert len(ids) >= 10
    victim = ids[len(ids) // 2]
    async with store.db.write() as conn:  # someone rewrites who decided
        await conn.execute(
            sa.text("UPDATE audit_events SET actor = 'U_SOMEONE_ELSE' WHERE id = :id"),
            {"id": victim},
        )
    code, out, err = await sayso(db_url, "audit", "verify")
    assert code == 1
    assert f"broken at event {victim}:" in err
    assert "edited" in err


async def test_verify_names_the_event_after_a_deleted_one_and_a_cut_tail(store: Store) -> None:
    await _history(store)
    ids = await _ids(store)
    async with store.db.write() as conn:
        await conn.execute(sa.delete(audit_events).where(audit_events.c.id == ids[3]))
    verdict = await verify(store.audit)
    assert not verdict.ok and verdict.broken_id == ids[4]
    assert f"does not follow event {ids[2]}" in verdict.reason

    async with store.db.write() as conn:  # put it back as it was? no: cut the tail instead
        await conn.execute(sa.delete(audit_events).where(audit_events.c.id <= ids[4]))
        await conn.execute(sa.delete(audit_events).where(audit_events.c.id == ids[-1]))
    verdict = await verify(store.audit)
    assert not verdict.ok  # the first kept event no longer follows the anchor
    assert verdict.broken_id == ids[5]


async def test_the_tail_cut_alone_is_named(store: Store) -> None:
    await _history(store)
    ids = await _ids(store)
    async with store.db.write() as conn:
        await conn.execute(sa.delete(audit_events).where(audit_events.c.id >= ids[-2]))
    verdict = await verify(store.audit)
    assert not verdict.ok and verdict.broken_id == ids[-1]
    assert "deleted" in verdict.reason


async def test_concurrent_appends_from_several_replicas_stay_one_chain(
    make_store: StoreFactory,
) -> None:
    first = await make_store(replica_id="a")
    await first.upgrade()
    replicas = [first] + [await make_store(replica_id=f"r{i}") for i in range(3)]

    async def write(s: Store, n: int) -> None:
        for i in range(15):
            await s.audit.record(actor=f"U{n}", action="test", outcome="ok", detail=f"{n}-{i}")

    await asyncio.gather(*(write(s, n) for n, s in enumerate(replicas) for _ in range(2)))
    verdict = await verify(first.audit)
    assert verdict.ok, verdict.line()
    assert verdict.checked == 4 * 2 * 15


async def test_an_event_from_an_older_version_is_chained_by_the_next_append(store: Store) -> None:
    await _history(store)
    async with store.db.write() as conn:  # an old replica during a rolling upgrade: no hash
        await conn.execute(
            audit_events.insert().values(at=utcnow(), actor="U_OLD", action="x", outcome="ok")
        )
    assert (await verify(store.audit)).ok  # not broken: waiting to be chained
    await store.audit.record(actor="U_NEW", action="y", outcome="ok")
    verdict = await verify(store.audit)
    assert verdict.ok and verdict.checked == len(await _ids(store))


async def test_audit_retention_keeps_a_verifiable_chain(store: Store, db_url: str) -> None:
    await _history(store)
    ids = await _ids(store)
    old = utcnow() - timedelta(days=100)
    async with store.db.write() as conn:  # the first half is old; hashes cover `at`: rehash
        await conn.execute(
            sa.update(audit_events).where(audit_events.c.id <= ids[5]).values(at=old)
        )
    purged = await audit_ops.purge_audit(store.db, timedelta(days=30), keep_after=ids[3])
    assert purged == 4  # not past what the SIEM webhook has not had
    purged = await audit_ops.purge_audit(store.db, timedelta(days=30))
    assert purged == 2
    assert (await _ids(store))[0] == ids[6]
    verdict = await verify(store.audit)
    assert verdict.ok, verdict.line()


async def test_export_is_in_order_filtered_and_survives_a_broken_chain(
    store: Store, db_url: str
) -> None:
    await _history(store)
    async with store.db.write() as conn:
        await conn.execute(sa.text("UPDATE audit_events SET outcome = 'x' WHERE id = 2"))
    code, out, err = await sayso(db_url, "audit", "export", "--since", "2026-01-01")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == await _ids(store)
    assert rows[1]["outcome"] == "x"
    assert {r["agent_id"] for r in rows if r["run_id"]} == {"ops"}
    assert rows[0]["hash"] == rows[1]["prev_hash"]
    code, out, _ = await sayso(
        db_url, "audit", "export", "--since", "2026-01-01", "--format", "csv", "--tenant", "T9"
    )
    assert code == 0 and out.splitlines() == [",".join(_header())]
    code, out, _ = await sayso(db_url, "audit", "export", "--since", "2099-01-01")
    assert code == 0 and out == ""


def _header() -> list[str]:
    from bot.ops.audit import EXPORT_COLUMNS

    return list(EXPORT_COLUMNS)
