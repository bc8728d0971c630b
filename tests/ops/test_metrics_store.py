"""Decisions are counted as they are written, on both databases, inside the decision's
transaction without risking it; pending requests are read from the store at scrape time."""

from __future__ import annotations

import pytest

from bot.ops import metrics
from store import Store
from tests.storage.store_helpers import paused_run


def value(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


@pytest.fixture(autouse=True)
def counted(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics.install()
    monkeypatch.setattr(metrics, "PENDING_TTL", 0.0)
    monkeypatch.setattr(metrics.pending, "store", None)


async def test_decisions_expiries_and_pending_are_counted(store: Store) -> None:
    metrics.watch_store(store)
    await paused_run(store, "r1", approvers=["S_SRE"])
    await paused_run(store, "r2", approvers=[])
    await paused_run(store, "r3", approvers=["U_OPS"], minutes=-1)
    await metrics.pending.refresh()
    assert value("sayso_requests_pending", agent="ops", tool="deploy") == 3
    before = {
        who: value("sayso_decisions_total", decision="approved", who=who)
        for who in ("group", "anyone")
    }
    observed = value("sayso_time_to_decision_seconds_count")
    (a,) = await store.requests.for_run("r1")
    (b,) = await store.requests.for_run("r2")
    outcome = await store.requests.decide(a.id, actor="U1", status="approved")
    assert outcome.won
    await store.requests.decide(a.id, actor="U2", status="rejected")  # lost: not a decision
    await store.requests.decide(b.id, actor="U1", status="approved")
    expired_before = value("sayso_decisions_total", decision="expired", who="listed")
    assert len(await store.requests.expire_due()) == 1
    assert value("sayso_decisions_total", decision="approved", who="group") == before["group"] + 1
    assert value("sayso_decisions_total", decision="approved", who="anyone") == (
        before["anyone"] + 1
    )
    assert value("sayso_decisions_total", decision="expired", who="listed") == expired_before + 1
    assert value("sayso_time_to_decision_seconds_count") == observed + 3
    await metrics.pending.refresh()
    assert value("sayso_requests_pending", agent="ops", tool="deploy") == 0


async def test_the_slack_queues_are_read_at_scrape_time(store: Store) -> None:
    from store.intake import Intake
    from store.outbox import Outbox

    metrics.watch_store(store)
    await metrics.pending.refresh()
    assert value("sayso_slack_outbox_pending") == 0 and value("sayso_intake_pending") == 0
    outbox = Outbox(store.db)
    await outbox.put("msg:1", channel="C1", text="hello")
    await outbox.put("msg:2", channel="C1", text="again")
    await Intake(store.db).record("click:1", "block_actions", {"user": "U1"})
    await metrics.pending.refresh()
    assert value("sayso_slack_outbox_pending") == 2
    assert value("sayso_slack_outbox_oldest_seconds") >= 0
    assert value("sayso_intake_pending") == 1
