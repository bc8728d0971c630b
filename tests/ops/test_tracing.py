"""Traces with `sayso[otel]`: one approve flow gives the command's ack, the model requests, the
Slack calls and the decision as spans, the decision inside the click's trace; without the
extra or an endpoint nothing of OpenTelemetry is imported."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk", reason="needs the otel extra: pip install 'sayso[otel]'")

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bot.ops import tracing
from tests.e2e.flows import start_deploy
from tests.e2e.harness import Harness, running_harness
from tests.ops.helpers import ROOT, cli_env
from tests.ops.test_metrics import FrontHarness


@pytest.fixture
async def traced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Harness, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    from bot.config import load_settings

    assert tracing.setup(load_settings(), exporter=exporter)
    monkeypatch.setattr("tests.e2e.harness.Harness", FrontHarness)
    try:
        async with running_harness(tmp_path) as h:
            yield h, exporter
    finally:
        tracing.reset()


async def test_an_approve_flow_is_traced(traced: tuple[Harness, InMemorySpanExporter]) -> None:
    h, exporter = traced
    card = await start_deploy(h)
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    await h.sandbox.wait_for(lambda sb: "Deployed v2 to staging." in h.thread_text(), timeout=10)
    await h.idle()
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    assert "slack.ack command" in names
    assert "slack.ack block_actions" in names
    assert sum(n.startswith("model.request ") for n in names) >= 2
    assert "slack.chat.postMessage" in names and "slack.chat.update" in names
    (decision,) = [s for s in spans if s.name.startswith("sayso.decision")]
    assert decision.name == "sayso.decision approved"
    assert decision.attributes["sayso.tool"] == "deploy"
    click = next(s for s in spans if s.name == "slack.ack block_actions")
    assert decision.context.trace_id == click.context.trace_id  # linked from the click
    # A run is one trace across its pause (and whichever worker continues it): its drives,
    # their model requests and its tool bodies.
    drives = [s for s in spans if s.name == "sayso.run drive"]
    assert len(drives) >= 2  # before the pause, and the continuation after the decision
    run_trace = drives[0].context.trace_id
    assert {d.context.trace_id for d in drives} == {run_trace}
    models = [s for s in spans if s.name.startswith("model.request ")]
    assert {m.context.trace_id for m in models} == {run_trace}
    (tool,) = [s for s in spans if s.name == "tool deploy"]
    assert tool.context.trace_id == run_trace and tool.attributes["sayso.tool"] == "deploy"
    if not h.split:  # driven where the click was handled: the continuation links to it
        linked = {link.context.trace_id for d in drives for link in d.links}
        assert click.context.trace_id in linked
    assert not any(str(v).startswith("xoxb-") for s in spans for v in (s.attributes or {}).values())


def test_without_an_endpoint_nothing_of_opentelemetry_is_imported() -> None:
    probe = (
        "import sys\n"
        "import bot.cli, bot.serve, bot.worker, bot.slack.app, bot.ops.metrics, bot.ops.tracing\n"
        "from bot.config import load_settings\n"
        "assert not bot.ops.tracing.setup(load_settings())\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env=cli_env("sqlite+aiosqlite:///:memory:"),
        cwd=str(ROOT),
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"
