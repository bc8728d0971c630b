"""Shared test helpers: sample data and a Slack-like view.state.values from a modal."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.slack.blocks.data import CardInfo, RunInfo

WHEN = datetime(2030, 1, 2, 3, 4, tzinfo=UTC)


def card(**kw: Any) -> CardInfo:
    base: dict[str, Any] = {
        "request_id": "req_1",
        "run_id": "run_1",
        "agent_id": "ops",
        "tool_name": "deploy",
        "kind": "approval",
        "arguments": {"service": "api", "version": "v2"},
        "requester": "U123",
        "expires_at": WHEN,
    }
    base.update(kw)
    return CardInfo(**base)


def run(**kw: Any) -> RunInfo:
    base: dict[str, Any] = {
        "run_id": "run_1",
        "agent_id": "ops",
        "status": "running",
        "request_text": "deploy v2 to staging",
        "requester": "U123",
        "channel_id": "C1",
        "thread_ts": "1700000000.000100",
    }
    base.update(kw)
    return RunInfo(**base)


def state_values(view: dict, overrides: dict[str, str | None] | None = None) -> dict:
    """What Slack sends back in view.state.values when the person submits as prefilled."""
    overrides = overrides or {}
    values: dict[str, dict] = {}
    for block in view["blocks"]:
        if block["type"] != "input":
            continue
        el = block["element"]
        bid = block["block_id"]
        if el["type"] == "static_select":
            opt = el.get("initial_option")
            if bid in overrides:
                v = overrides[bid]
                opt = None if v is None else {"text": {"type": "plain_text", "text": v}, "value": v}
            entry = {"type": "static_select", "selected_option": opt}
        else:
            value = overrides.get(bid, el.get("initial_value"))
            entry = {"type": "plain_text_input", "value": value}
        values[bid] = {el["action_id"]: entry}
    return values


def actions(message: dict) -> list[dict]:
    return [e for b in message["blocks"] if b["type"] == "actions" for e in b["elements"]]


def text_of(blocks: list[dict]) -> str:
    out = []
    for b in blocks:
        if "text" in b:
            out.append(b["text"] if isinstance(b["text"], str) else b["text"]["text"])
        for e in b.get("elements", []):
            if "text" in e and isinstance(e["text"], str):
                out.append(e["text"])
    return "\n".join(out)
