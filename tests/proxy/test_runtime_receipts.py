"""sayso's own runtime runs a decided call only with the arguments that were approved: a row
altered in SQL after the decision is refused (the tool body never runs, the model reads why,
the refusal is audited), while an untouched decision runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from bot.service.approved_arguments import ALTERED_REASON
from store import Store
from tests.e2e.flows import start_deploy
from tests.e2e.harness import buttons
from tests.proxy.conftest import Live

pytestmark = pytest.mark.skipif(
    os.environ.get("SAYSO_TEST_SPLIT") == "1",
    reason="stops and restarts the in-process bot around a decision written to its database",
)

EDITED = {"environment": "staging", "version": "v2", "replicas": 3}


@pytest.mark.parametrize("altered", ["edited_arguments", "saved call", None])
async def test_a_call_altered_after_its_decision_does_not_run(
    live: Live, tmp_path: Path, altered: str | None
) -> None:
    h = live.h
    card = await start_deploy(h)
    request_id = next(b["value"] for b in buttons(card) if b.get("action_id") == "approve")
    await h.stop_bot()
    store = Store(h.db_url)  # the decision as a click would write it, with the bot down
    try:
        edit = altered != "saved call"
        if edit:
            outcome = await store.requests.decide(
                request_id, actor="U_APPROVER", status="edited", edited_arguments=EDITED
            )
        else:
            outcome = await store.requests.decide(request_id, actor="U_APPROVER", status="approved")
        assert outcome.won
        async with store.db.write() as conn:  # ... and then someone changes the row in SQL
            if altered == "edited_arguments":
                changed = json.dumps({**EDITED, "environment": "production"})
                await conn.execute(
                    sa.text("UPDATE approval_requests SET edited_arguments = :v WHERE id = :id"),
                    {"v": changed, "id": request_id},
                )
            elif altered == "saved call":
                run_id = (await store.requests.get(request_id)).spec.run_id  # type: ignore[union-attr]
                row = (
                    await conn.execute(
                        sa.text("SELECT state FROM runs WHERE id = :id"), {"id": run_id}
                    )
                ).one()
                assert '"staging"' in row.state
                await conn.execute(
                    sa.text("UPDATE runs SET state = :s WHERE id = :id"),
                    {"s": row.state.replace('"staging"', '"production"'), "id": run_id},
                )
    finally:
        await store.close()
    await h.start_bot()  # its sweep continues the run the decision made ready
    await h.sandbox.wait_for(lambda sb: "Deployed v2 to staging." in h.thread_text(), timeout=15)
    await h.idle()
    assert h.bot is not None
    if altered is None:
        assert [d["replicas"] for d in h.effects.deploys] == [3]
        return
    assert h.effects.deploys == []  # the body never ran
    told = json.dumps(h.model.requests[-1])
    assert "changed after it was approved" in told and ALTERED_REASON[:40] in told
    run_id = (await h.bot.store.requests.get(request_id)).spec.run_id  # type: ignore[union-attr]
    trail = await h.bot.store.audit.trail(run_id)
    refused = [e for e in trail if e.action == "receipt_mismatch"]
    assert len(refused) == 1 and refused[0].request_id == request_id
    assert refused[0].outcome == "refused"
