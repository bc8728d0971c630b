"""Block Kit for the sandbox tests: a button, a card like sayso's, a modal."""

from __future__ import annotations

import json
from typing import Any


def button(action_id: str, text: str, value: str, style: str | None = None) -> dict[str, Any]:
    element: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": text},
        "value": value,
    }
    if style:
        element["style"] = style
    return element


def card_blocks() -> list[dict[str, Any]]:
    """An approval card like sayso's: header, section with fields, context, buttons."""
    return [
        {"type": "header", "text": {"type": "plain_text", "text": "Approval needed"}},
        {
            "type": "section",
            "block_id": "call",
            "text": {"type": "mrkdwn", "text": "*deploy* wants to run `kubectl apply`"},
            "fields": [{"type": "mrkdwn", "text": "*Env*\nstaging"}],
        },
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "asked by <@U_REQUESTER>"}]},
        {"type": "divider"},
        {
            "type": "actions",
            "block_id": "decision",
            "elements": [
                button("approve", "Approve", "call-1", "primary"),
                button("reject", "Reject", "call-1", "danger"),
            ],
        },
    ]


def modal(title: str = "Edit the call", **extra: Any) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": "edit_call",
        "title": {"type": "plain_text", "text": title},
        "submit": {"type": "plain_text", "text": "Save"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "private_metadata": json.dumps({"call_id": "call-1"}),
        "blocks": [
            {
                "type": "input",
                "block_id": "reason",
                "label": {"type": "plain_text", "text": "Reason"},
                "element": {"type": "plain_text_input", "action_id": "text", "multiline": True},
            },
            {
                "type": "input",
                "block_id": "env",
                "optional": True,
                "label": {"type": "plain_text", "text": "Environment"},
                "element": {
                    "type": "static_select",
                    "action_id": "pick",
                    "options": [
                        {"text": {"type": "plain_text", "text": n}, "value": n}
                        for n in ("staging", "production")
                    ],
                },
            },
        ],
        **extra,
    }
