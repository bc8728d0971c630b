"""GET /metrics on the front of `sayso run`: the metrics move as expected across one approve
flow and one reject flow (scraped over HTTP, parsed with prometheus-client's parser)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.agent import Agent
from bot.front import Bot
from bot.ops import metrics, metrics_http
from bot.serve import http_front, observe
from tests.e2e.flows import open_modal, start_deploy
from tests.e2e.harness import Harness, running_harness
from tests.helpers.waiting import eventually

NAMES = {
    "sayso_requests_pending",
    "sayso_decisions_total",
    "sayso_time_to_decision_seconds",
    "sayso_runs_total",
    "sayso_runs_in_flight",
    "sayso_ack_seconds",
    "sayso_slack_api_errors_total",
    "sayso_model_request_seconds",
    "sayso_model_tokens_total",
    "sayso_lease_takeovers_total",
    "sayso_webhook_deliveries_total",
}


class FrontHarness(Harness):
    """The harness as `sayso run`: the bot served by its HTTP front (bot/serve.py), runs
    driven by its embedded worker (on its own thread and loop)."""

    stack: AsyncExitStack | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.split = True

    async def start_bot(self, agents: list[Agent] | None = None) -> Bot:
        await super().start_bot(agents)
        assert self.bot is not None and self._runner is not None
        await self._runner.cleanup()  # the harness's own app: replaced by the real front
        self._runner = None
        observe(self.bot)
        self.stack = AsyncExitStack()
        await self.stack.enter_async_context(http_front(self.bot, "127.0.0.1", self.port))
        return self.bot

    async def stop_bot(self) -> None:
        if self.stack is not None:
            await self.stack.aclose()
            self.stack = None
        await super().stop_bot()


@pytest.fixture
async def front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    monkeypatch.setattr(metrics, "PENDING_TTL", 0.0)
    monkeypatch.setattr("tests.e2e.harness.Harness", FrontHarness)
    async with running_harness(tmp_path) as h:
        yield h


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(h: Harness) -> tuple[Samples, set[str], dict[str, str]]:
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{h.url}/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(response.text):
        types[family.name] = family.type
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples, set(types), types


def total(samples: Samples, name: str, **labels: str) -> float:
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


async def test_metrics_move_across_an_approve_and_a_reject_flow(front: Harness) -> None:
    h = front
    before, names, types = await scrape(h)
    assert {n.removesuffix("_total") for n in NAMES} <= names | {
        n.removesuffix("_total") for n in names
    }
    assert types["sayso_requests_pending"] == "gauge"
    assert types["sayso_time_to_decision_seconds"] == "histogram"
    assert types["sayso_decisions"] == "counter"  # the parser drops the _total suffix

    card = await start_deploy(h)
    waiting, _, _ = await scrape(h)
    assert total(waiting, "sayso_requests_pending", agent="ops", tool="deploy") == 1
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda sb: "Deployed v2 to staging." in h.thread_text(), timeout=10)
    await h.idle()

    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v3"})])
    h.model.reply(text="Not deployed.")
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy v3 to staging")
    await h.sandbox.wait_for(lambda sb: len(h.cards("C_GENERAL")) == 1, timeout=10)
    second = h.cards()[0]
    view = await open_modal(h, "U_APPROVER", second, "reject")
    await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "Freeze"})
    await h.sandbox.wait_for(lambda sb: "Not deployed." in h.thread_text(), timeout=10)
    await h.idle()

    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v4"})])
    await h.sandbox.slash_command("U_REQUESTER", "ops deploy v4 to staging")
    assert h.bot is not None
    bot = h.bot
    (waiting,) = await eventually(
        lambda: bot.store.runs.list(status="waiting_for_human"), timeout=10, what="a third run"
    )
    await bot.store.runs.cancel(waiting.id, actor="U_ADMIN", detail="not today")
    await h.idle()

    after, _, _ = await scrape(h)

    def moved(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert moved("sayso_runs_total", status="completed") == 2
    assert moved("sayso_runs_total", status="cancelled") == 1
    assert moved("sayso_runs_total", status="failed") == 0
    assert total(after, "sayso_runs_in_flight") == 0
    assert moved("sayso_decisions_total", decision="approved") == 1
    assert moved("sayso_decisions_total", decision="rejected") == 1
    assert moved("sayso_time_to_decision_seconds_count") == 2
    assert total(after, "sayso_requests_pending") == 0  # the cancelled run's request closed
    assert moved("sayso_ack_seconds_count", type="command") == 3
    assert moved("sayso_ack_seconds_count", type="block_actions") == 2
    assert moved("sayso_ack_seconds_count", type="view_submission") == 1
    assert moved("sayso_model_request_seconds_count", outcome="ok") >= 4
    assert moved("sayso_slack_api_errors_total") == 0
    labels = {dict(ls).get("who") for (n, ls) in after if n == "sayso_decisions_total"}
    assert labels <= {"listed", "group", "anyone"}
    assert not any(v.startswith(("U_", "run")) for (_, ls) in after for _, v in ls), (
        "label values are bounded: no user or run ids"
    )


async def test_a_worker_serves_metrics_on_its_own_port() -> None:
    from bot.serve import free_port

    port = free_port()
    runner = await metrics_http.serve_metrics("127.0.0.1", port)
    try:
        async with httpx.AsyncClient() as client:
            response = await client.get(f"http://127.0.0.1:{port}/metrics")
        assert response.status_code == 200
        assert "sayso_runs_in_flight" in response.text
    finally:
        await runner.cleanup()
