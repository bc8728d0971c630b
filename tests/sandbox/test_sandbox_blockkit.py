"""Slack's Block Kit limits as the sandbox enforces them (pure checks, no server)."""

from __future__ import annotations

import pytest

from bot.sandbox.blockkit import check_message_blocks, check_view


def text(value: str, kind: str = "plain_text") -> dict:
    return {"type": kind, "text": value}


def option(label: str, value: str) -> dict:
    return {"text": text(label), "value": value}


def button(action_id: str = "a", label: str = "Go", value: str = "v") -> dict:
    return {"type": "button", "action_id": action_id, "text": text(label), "value": value}


def modal(**fields) -> dict:
    return {"type": "modal", "title": text("Title"), "blocks": [], **fields}


@pytest.mark.parametrize(
    ("blocks", "pointer"),
    [
        ([{"type": "section", "fields": [text("f", "mrkdwn")] * 11}], "/blocks/0/fields"),
        ([{"type": "section", "fields": [text("f" * 2001, "mrkdwn")]}], "/blocks/0/fields/0/text"),
        ([{"type": "header", "text": text("h" * 151)}], "/blocks/0/text/text"),
        (
            [{"type": "actions", "elements": [button(label="b" * 76)]}],
            "/blocks/0/elements/0/text/text",
        ),
        (
            [{"type": "actions", "elements": [button(value="v" * 2001)]}],
            "/blocks/0/elements/0/value",
        ),
        (
            [{"type": "actions", "elements": [button(action_id="a" * 256)]}],
            "/blocks/0/elements/0/action_id",
        ),
        ([{"type": "divider", "block_id": "b" * 256}], "/blocks/0/block_id"),
        (
            [{"type": "actions", "elements": [button(str(i)) for i in range(26)]}],
            "/blocks/0/elements",
        ),
        ([{"type": "context", "elements": [text("c", "mrkdwn")] * 11}], "/blocks/0/elements"),
        ([{"type": "header", "text": text("h", "mrkdwn")}], "/blocks/0/text/type"),
        ([{"type": "carousel"}], "/blocks/0/type"),
        ([{"type": "section"}], "/blocks/0"),
        (
            [
                {
                    "type": "section",
                    "text": text("pick", "mrkdwn"),
                    "accessory": {
                        "type": "static_select",
                        "action_id": "s",
                        "options": [option(str(i), str(i)) for i in range(101)],
                    },
                }
            ],
            "/blocks/0/accessory/options",
        ),
        (
            [
                {
                    "type": "actions",
                    "elements": [
                        {"type": "static_select", "options": [option("o" * 76, "v" * 151)]}
                    ],
                }
            ],
            "/blocks/0/elements/0/options/0/text/text",
        ),
        (
            [{"type": "actions", "elements": [{**button(), "confirm": {"title": text("t")}}]}],
            "/blocks/0/elements/0/confirm/text",
        ),
    ],
)
def test_message_limits(blocks: list, pointer: str) -> None:
    errors = check_message_blocks(blocks)
    assert any(e.endswith(f"[json-pointer:{pointer}]") for e in errors), errors


def test_valid_message_passes() -> None:
    blocks = [
        {"type": "header", "text": text("h" * 150)},
        {"type": "section", "text": text("s" * 3000, "mrkdwn"), "accessory": button()},
        {"type": "actions", "elements": [button(str(i)) for i in range(25)]},
        {"type": "context", "elements": [text("c", "mrkdwn")] * 10},
        {"type": "image", "image_url": "http://x/y.png", "alt_text": "chart"},
        {"type": "rich_text", "elements": []},
    ]
    assert check_message_blocks(blocks) == []


@pytest.mark.parametrize(
    ("view", "pointer"),
    [
        (modal(title=text("t" * 25)), "/view/title/text"),
        (modal(submit=text("s" * 25)), "/view/submit/text"),
        (modal(close=text("c" * 25)), "/view/close/text"),
        (modal(private_metadata="m" * 3001), "/view/private_metadata"),
        (modal(callback_id="c" * 256), "/view/callback_id"),
        (modal(blocks=[{"type": "divider"}] * 101), "/view/blocks"),
        (
            modal(
                blocks=[
                    {
                        "type": "input",
                        "label": text("Why"),
                        "element": {"type": "plain_text_input", "max_length": 3001},
                    }
                ]
            ),
            "/view/submit",
        ),
        (
            modal(
                submit=text("Save"),
                blocks=[
                    {
                        "type": "input",
                        "label": text("Why"),
                        "element": {"type": "plain_text_input", "initial_value": "x" * 3001},
                    }
                ],
            ),
            "/view/blocks/0/element/initial_value",
        ),
        ({"type": "home", "blocks": [{"type": "divider"}] * 101}, "/view/blocks"),
    ],
)
def test_view_limits(view: dict, pointer: str) -> None:
    errors = check_view(view)
    assert any(e.endswith(f"[json-pointer:{pointer}]") for e in errors), errors


def test_valid_modal_passes() -> None:
    view = modal(
        title=text("t" * 24),
        submit=text("s" * 24),
        private_metadata="m" * 3000,
        blocks=[
            {
                "type": "input",
                "block_id": "why",
                "label": text("Why"),
                "element": {"type": "plain_text_input", "action_id": "t", "max_length": 3000},
            }
        ]
        + [{"type": "divider"}] * 99,
    )
    assert check_view(view) == []
