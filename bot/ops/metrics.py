"""Prometheus metrics: one registry, the metric names of issue 23, one-line calls to move them.

Label values are bounded: decisions, statuses, request types, Slack methods and error codes,
configured model names, agent and tool names; never user ids or run ids.

`sayso_requests_pending` is read from the store at scrape time (one grouped query, cached
for `PENDING_TTL` seconds), so every replica reports the same, right, number. The counters
and histograms count what this process did; Prometheus sums the replicas.

Where the numbers come from: decisions from the audit trail as each decision is written
(`store.audit.AUDIT_OBSERVERS`), model requests from the providers
(`bot.agent.models.provider.REQUEST_OBSERVERS`), acks from the HTTP front (`ack_middleware`),
runs in flight from the worker, webhook deliveries from the audit trail and the SIEM webhook.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy.ext.asyncio import AsyncConnection

from store import Store

log = logging.getLogger("sayso.metrics")

REGISTRY = CollectorRegistry(auto_describe=True)
PENDING_TTL = 5.0
DECISION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 900, 1800, 3600, 4 * 3600, 24 * 3600)
FAST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10)
MODEL_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120)

decisions_total = Counter(
    "sayso_decisions_total",
    "Approval requests decided, by decision and by who may decide (listed, group, anyone)",
    ["decision", "who"],
    registry=REGISTRY,
)
time_to_decision_seconds = Histogram(
    "sayso_time_to_decision_seconds",
    "From the request's creation to its decision",
    buckets=DECISION_BUCKETS,
    registry=REGISTRY,
)
runs_total = Counter(
    "sayso_runs_total", "Runs ended, by final status", ["status"], registry=REGISTRY
)
runs_in_flight = Gauge(
    "sayso_runs_in_flight",
    "Runs this process's worker drives now",
    registry=REGISTRY,
)
ack_seconds = Histogram(
    "sayso_ack_seconds",
    "Time to answer Slack's request (the ack), by request type",
    ["type"],
    buckets=FAST_BUCKETS,
    registry=REGISTRY,
)
slack_api_errors_total = Counter(
    "sayso_slack_api_errors_total",
    "Slack Web API calls that failed, by method and error",
    ["method", "error"],
    registry=REGISTRY,
)
model_request_seconds = Histogram(
    "sayso_model_request_seconds",
    "Model requests, by model and outcome",
    ["model", "outcome"],
    buckets=MODEL_BUCKETS,
    registry=REGISTRY,
)
model_tokens_total = Counter(
    "sayso_model_tokens_total",
    "Model tokens, by model and kind (input, output)",
    ["model", "kind"],
    registry=REGISTRY,
)
lease_takeovers_total = Counter(
    "sayso_lease_takeovers_total",
    "Runs taken over after another replica's lease lapsed",
    registry=REGISTRY,
)
slack_ratelimited_total = Counter(
    "sayso_slack_ratelimited_total",
    "Slack calls answered 429 (rate limited), by method",
    ["method"],
    registry=REGISTRY,
)
webhook_deliveries_total = Counter(
    "sayso_webhook_deliveries_total",
    "Webhook delivery attempts (approval API and audit SIEM), by outcome",
    ["outcome"],
    registry=REGISTRY,
)

# -- one-line calls ---------------------------------------------------------------------------


def decision(decision: str, who: str, seconds: float | None) -> None:
    decisions_total.labels(decision=decision, who=who).inc()
    if seconds is not None:
        time_to_decision_seconds.observe(max(seconds, 0.0))


def run_finished(status: str) -> None:
    runs_total.labels(status=status).inc()


def ack(request_type: str, seconds: float) -> None:
    ack_seconds.labels(type=request_type).observe(seconds)


def slack_api_error(method: str, error: str) -> None:
    slack_api_errors_total.labels(method=method, error=error[:64]).inc()


def model_request(
    model: str, seconds: float, outcome: str, input_tokens: int = 0, output_tokens: int = 0
) -> None:
    model_request_seconds.labels(model=model, outcome=outcome).observe(seconds)
    if input_tokens:
        model_tokens_total.labels(model=model, kind="input").inc(input_tokens)
    if output_tokens:
        model_tokens_total.labels(model=model, kind="output").inc(output_tokens)


def slack_ratelimited(method: str) -> None:
    slack_ratelimited_total.labels(method=method).inc()


def lease_takeover() -> None:
    lease_takeovers_total.inc()


def webhook_delivery(outcome: str) -> None:
    webhook_deliveries_total.labels(outcome=outcome).inc()


def who_may_decide(principals: list[str]) -> str:
    if not principals or "*" in principals:
        return "anyone"
    return "group" if any(p.startswith("S") for p in principals) else "listed"


# -- sayso_requests_pending: read from the store at scrape time --------------------------------


class PendingRequests(Collector):
    """`sayso_requests_pending{agent,tool}`: one grouped query, cached `PENDING_TTL` s."""

    def __init__(self) -> None:
        self.store: Store | None = None
        self._rows: list[tuple[str, str, int]] = []
        self._queues: tuple[int, float, int] = (0, 0.0, 0)
        self._at = 0.0

    async def refresh(self, force: bool = False) -> None:
        if self.store is None or (not force and time.monotonic() - self._at < PENDING_TTL):
            return
        try:
            self._rows = await self.store.requests.pending_counts()
        except Exception as exc:
            log.warning("event=metrics_pending_failed error=%s", type(exc).__name__)
            return
        self._queues = await self._durable_slack(self.store)
        self._at = time.monotonic()

    async def _durable_slack(self, store: Store) -> tuple[int, float, int]:
        """The Slack outbox's depth and oldest wait, the intake's depth (issue 22)."""
        try:
            outbox, intake = store.outbox(), store.intake()
            return (
                await outbox.pending_count(),
                await outbox.oldest_pending_age(),
                await intake.pending_count(),
            )
        except Exception as exc:
            log.warning("event=metrics_queues_failed error=%s", type(exc).__name__)
            return self._queues

    def describe(self) -> list[Metric]:
        return [self._family(), *self._queue_families()]

    def collect(self) -> list[Metric]:
        family = self._family()
        for agent, tool, count in self._rows:
            family.add_metric([agent, tool], count)
        outbox, oldest, intake = self._queue_families()
        outbox.add_metric([], self._queues[0])
        oldest.add_metric([], self._queues[1])
        intake.add_metric([], self._queues[2])
        return [family, outbox, oldest, intake]

    @staticmethod
    def _queue_families() -> tuple[GaugeMetricFamily, GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "sayso_slack_outbox_pending", "Slack messages waiting to be sent (all replicas)"
            ),
            GaugeMetricFamily(
                "sayso_slack_outbox_oldest_seconds",
                "How long the oldest Slack message waiting to be sent has waited",
            ),
            GaugeMetricFamily(
                "sayso_intake_pending", "Slack interactions recorded and not yet processed"
            ),
        )

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "sayso_requests_pending",
            "Approval requests waiting for a person, by agent and tool (all replicas)",
            labels=["agent", "tool"],
        )


pending = PendingRequests()
REGISTRY.register(pending)


def watch_store(store: Store, *, replace: bool = False) -> None:
    """Read `sayso_requests_pending` from this store: the one of the loop serving
    /metrics (the front's in `sayso run`, which passes `replace`; else the first given)."""
    if pending.store is None or replace:
        pending.store = store
        pending._at = 0.0


# -- observers: the audit trail, the model providers -----------------------------------------


async def _on_audit(conn: AsyncConnection, event: Mapping[str, Any]) -> None:
    action, outcome, request_id = event["action"], event["outcome"], event.get("request_id")
    if action == "webhook":
        webhook_delivery(outcome)
        return
    if action == "cancel" and outcome == "ok" and event.get("run_id"):
        run_finished("cancelled")
        return
    if not request_id or not (
        (action == "decide" and outcome == "won") or (action == "expire" and outcome == "expired")
    ):
        return
    record = event.get("request")  # the request as the deciding transaction left it
    if record is None:
        return
    principals = [*record.policy.approvers, *(["*"] if record.policy.anyone else [])]
    seconds = None
    decided_at, created_at = record.state.decided_at, record.spec.created_at
    if decided_at is not None and created_at is not None:
        seconds = (decided_at - created_at).total_seconds()
    decision(record.state.status, who_may_decide(principals), seconds)


def _on_model_request(model: str, seconds: float, outcome: str, usage: Any) -> None:
    model_request(
        model,
        seconds,
        outcome,
        int(getattr(usage, "input_tokens", 0) or 0),
        int(getattr(usage, "output_tokens", 0) or 0),
    )


def render() -> bytes:
    """The registry in Prometheus text format."""
    return generate_latest(REGISTRY)


def install() -> None:
    """Count decisions, deliveries and model requests in this process (idempotent)."""
    from bot.agent.models import provider
    from store import audit

    if _on_audit not in audit.AUDIT_OBSERVERS:
        audit.AUDIT_OBSERVERS.append(_on_audit)
    if _on_model_request not in provider.REQUEST_OBSERVERS:
        provider.REQUEST_OBSERVERS.append(_on_model_request)
