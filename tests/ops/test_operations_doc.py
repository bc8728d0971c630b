"""docs/operations.md ships a Grafana dashboard and three alert rules that parse and use only
the metrics sayso exports."""

from __future__ import annotations

import json
import re

import yaml

from bot.ops.metrics import REGISTRY
from tests.ops.helpers import ROOT

DOC = (ROOT / "docs" / "operations.md").read_text()


def block(lang: str) -> str:
    match = re.search(rf"```{lang}\n(.*?)\n```", DOC, re.S)
    assert match, f"no ```{lang} block"
    return match.group(1)


def exported() -> set[str]:
    names = set()
    for metric in REGISTRY.collect():
        names |= {metric.name, f"{metric.name}_total"}
        names |= {f"{metric.name}_{suffix}" for suffix in ("bucket", "count", "sum")}
    return names


def used(expr: str) -> set[str]:
    return set(re.findall(r"\bsayso_[a-z_]+", expr))


def test_three_alert_rules_on_exported_metrics() -> None:
    rules = yaml.safe_load(block("yaml"))["groups"][0]["rules"]
    assert [r["alert"] for r in rules] == [
        "SaysoApprovalPendingTooLong",
        "SaysoSlackErrors",
        "SaysoRunsFailing",
    ]
    for rule in rules:
        assert used(rule["expr"]) and used(rule["expr"]) <= exported(), rule["alert"]
        assert rule["annotations"]["summary"]


def test_the_grafana_dashboard_uses_exported_metrics() -> None:
    dashboard = json.loads(block("json"))
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    assert len(dashboard["panels"]) >= 8
    names = set().union(*(used(e) for e in exprs))
    assert names <= exported()
    assert {"sayso_requests_pending", "sayso_decisions_total", "sayso_runs_in_flight"} <= names


def test_the_registry_holds_exactly_the_issue_names_with_their_types() -> None:
    types = {m.name: m.type for m in REGISTRY.collect()}
    assert types == {
        "sayso_requests_pending": "gauge",
        "sayso_decisions": "counter",  # exposed as sayso_decisions_total
        "sayso_time_to_decision_seconds": "histogram",
        "sayso_runs": "counter",
        "sayso_runs_in_flight": "gauge",
        "sayso_ack_seconds": "histogram",
        "sayso_slack_api_errors": "counter",
        "sayso_model_request_seconds": "histogram",
        "sayso_model_tokens": "counter",
        "sayso_lease_takeovers": "counter",
        "sayso_webhook_deliveries": "counter",
    }
