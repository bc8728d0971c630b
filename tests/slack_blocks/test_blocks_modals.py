"""Modals: contract names, prefill, and parsing the submitted values."""

from __future__ import annotations

import enum
from typing import Literal

from bot.agent.tools import tool
from bot.slack.blocks import modals
from bot.slack.blocks.limits import validate_view

from .helpers import card, state_values


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@tool(require_approval=True)
def deploy(
    service: str,
    replicas: int,
    ratio: float = 0.5,
    env: Literal["staging", "prod"] = "staging",
    dry_run: bool = False,
    labels: dict | None = None,
    hosts: list[str] | None = None,
    color: Color = Color.RED,
    level: Literal[1, 2, 3] | None = None,
) -> str:
    """Deploy a service."""
    return "ok"


PARAMS = deploy.parameters
ARGS = {
    "service": "api",
    "replicas": 3,
    "ratio": 0.25,
    "env": "prod",
    "dry_run": True,
    "labels": {"team": "ops", "tier": [1, 2]},
    "hosts": ["a", "b"],
    "color": "blue",
    "level": 2,
}


def edit_card(**kw):
    return card(tool_name="deploy", arguments=ARGS, parameters=PARAMS, **kw)


def inputs(view: dict) -> dict[str, dict]:
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


def test_edit_modal_contract() -> None:
    view = modals.edit_modal(edit_card())
    validate_view(view)
    assert view["callback_id"] == "sayso_edit"
    assert view["private_metadata"] == "req_1"
    assert list(inputs(view)) == list(PARAMS["properties"])
    for block in inputs(view).values():
        assert block["element"]["action_id"] == "value"
    by = inputs(view)
    assert by["service"]["element"]["type"] == "plain_text_input"
    assert by["service"]["element"]["initial_value"] == "api"
    assert by["replicas"]["element"]["initial_value"] == "3"
    assert by["env"]["element"]["type"] == "static_select"
    assert [o["value"] for o in by["env"]["element"]["options"]] == ["staging", "prod"]
    assert by["env"]["element"]["initial_option"]["value"] == "prod"
    assert [o["value"] for o in by["dry_run"]["element"]["options"]] == ["true", "false"]
    assert by["dry_run"]["element"]["initial_option"]["value"] == "true"
    assert by["labels"]["element"]["multiline"] is True
    assert '"team": "ops"' in by["labels"]["element"]["initial_value"]
    assert by["color"]["element"]["type"] == "static_select"  # enum via $ref
    assert by["level"]["element"]["type"] == "static_select"  # enum via anyOf
    assert by["service"]["optional"] is False and by["replicas"]["optional"] is False
    assert all(by[n]["optional"] for n in ("ratio", "env", "dry_run", "labels", "level"))


def test_parse_edit_round_trip() -> None:
    view = modals.edit_modal(edit_card())
    arguments, errors = modals.parse_edit(state_values(view), PARAMS)
    assert errors == {}
    assert arguments == ARGS
    assert deploy.validate(arguments)["color"] == "blue"


def test_parse_edit_changes_and_types() -> None:
    view = modals.edit_modal(edit_card())
    values = state_values(
        view,
        {
            "replicas": "5",
            "ratio": "2",
            "dry_run": "false",
            "env": "staging",
            "level": "3",
            "labels": "",
            "hosts": '["c"]',
        },
    )
    arguments, errors = modals.parse_edit(values, PARAMS)
    assert errors == {}
    assert arguments["replicas"] == 5 and isinstance(arguments["replicas"], int)
    assert arguments["ratio"] == 2
    assert arguments["dry_run"] is False
    assert arguments["env"] == "staging" and arguments["level"] == 3
    assert "labels" not in arguments  # empty optional input -> omitted
    assert arguments["hosts"] == ["c"]


def test_parse_edit_errors() -> None:
    view = modals.edit_modal(edit_card())
    values = state_values(view, {"replicas": "three", "ratio": "1.5x", "labels": '{"a": 1,'})
    _arguments, errors = modals.parse_edit(values, PARAMS)
    assert set(errors) == {"replicas", "ratio", "labels"}
    assert "whole number" in errors["replicas"]
    assert "number" in errors["ratio"]
    assert errors["labels"].startswith("Not valid JSON")
    values = state_values(view, {"replicas": "2.5"})
    assert "whole number" in modals.parse_edit(values, PARAMS)[1]["replicas"]
    values = state_values(view, {"replicas": None})
    assert modals.parse_edit(values, PARAMS)[1] == {"replicas": "replicas is required."}


def test_edit_without_schema_infers_from_arguments() -> None:
    c = card(arguments={"n": 2, "flag": False, "name": "x", "obj": {"k": 1}})
    view = modals.edit_modal(c)
    validate_view(view)
    arguments, errors = modals.parse_edit(state_values(view), None, original=c.arguments)
    assert errors == {} and arguments == c.arguments


def test_too_long_argument_is_kept_not_edited() -> None:
    args = {**ARGS, "service": "s" * 5000}
    c = card(arguments=args, parameters=PARAMS)
    view = modals.edit_modal(c)
    validate_view(view)
    assert "service" not in inputs(view)
    assert any(b["block_id"] == "sayso:kept" for b in view["blocks"])
    arguments, errors = modals.parse_edit(state_values(view), PARAMS, original=args)
    assert errors == {} and arguments == args


def test_edit_modal_with_200_arguments_fits() -> None:
    args = {f"arg_{i}": "v" * 50 for i in range(200)}
    view = modals.edit_modal(card(arguments=args))
    validate_view(view)
    assert len(view["blocks"]) <= 100
    arguments, errors = modals.parse_edit(state_values(view), None, original=args)
    assert errors == {} and arguments == args


def test_reject_modal_and_parse() -> None:
    view = modals.reject_modal(card())
    validate_view(view)
    assert view["callback_id"] == "sayso_reject" and view["private_metadata"] == "req_1"
    reason = inputs(view)["reason"]
    assert reason["optional"] is True and reason["element"]["action_id"] == "value"
    assert modals.parse_reason({"reason": {"value": {"value": "  too risky "}}}) == "too risky"
    assert modals.parse_reason({"reason": {"value": {"value": None}}}) is None
    assert modals.parse_reason({}) is None


def test_answer_modal_text_and_json() -> None:
    view = modals.answer_modal(card(kind="hitl", arguments={"question": "Which env?"}))
    validate_view(view)
    assert view["callback_id"] == "sayso_answer"
    answer = inputs(view)["answer"]
    assert answer["element"]["action_id"] == "value"
    assert modals.parse_answer({"answer": {"value": {"value": " prod "}}}, False) == ("prod", {})
    view = modals.answer_modal(card(kind="manual", returns_object=True))
    assert "JSON" in inputs(view)["answer"]["hint"]["text"]
    assert inputs(view)["answer"]["element"]["multiline"] is True
    ok = modals.parse_answer({"answer": {"value": {"value": '{"id": 7}'}}}, True)
    assert ok == ({"id": 7}, {})
    bad = modals.parse_answer({"answer": {"value": {"value": "{id: 7}"}}}, True)
    assert bad[0] is None and bad[1]["answer"].startswith("Not valid JSON")
    assert "answer" in modals.parse_answer({}, False)[1]


def test_review_modal_and_parse() -> None:
    c = card(
        kind="review", tool_name="human_review", arguments={"reason": "Tone?", "payload": "Hi"}
    )
    view = modals.review_modal(c)
    validate_view(view)
    assert view["callback_id"] == "sayso_review"
    block = inputs(view)["input"]
    assert block["element"]["action_id"] == "value" and block["element"]["multiline"] is True
    assert modals.parse_review({"input": {"value": {"value": "Looks good"}}}) == ("Looks good", {})
    assert modals.parse_review({"input": {"value": {"value": "  "}}})[1] == {
        "input": "Write a reply before sending."
    }


def test_view_args_modal_chunks_and_cuts() -> None:
    view = modals.view_args_modal(card(arguments={"body": "line\n" * 2000}))
    validate_view(view)
    assert view["callback_id"] == "sayso_view_args" and "submit" not in view
    sections = [b for b in view["blocks"] if b["block_id"].startswith("args:")]
    assert len(sections) > 1
    huge = modals.view_args_modal(card(arguments={"body": "<&>" * 200_000}))
    validate_view(huge)
    assert len(huge["blocks"]) == 100
    assert "cut:" in huge["blocks"][-1]["elements"][0]["text"]


def test_modal_titles_fit() -> None:
    for view in [
        modals.edit_modal(edit_card()),
        modals.reject_modal(card()),
        modals.answer_modal(card(kind="manual")),
        modals.review_modal(card(kind="review", arguments={"reason": "r"})),
        modals.view_args_modal(card()),
    ]:
        validate_view(view)
        assert len(view["title"]["text"]) <= 24
