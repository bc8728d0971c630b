"""Slack limits: helpers, validators, and every builder under huge inputs (hypothesis)."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.slack.blocks import cards, home, limits, messages, modals
from bot.slack.blocks.data import AgentInfo, CardInfo

from .helpers import card, run, state_values

SETTINGS = settings(
    max_examples=int(os.environ.get("SAYSO_HYPOTHESIS_EXAMPLES", "25")),
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)

text = st.text(alphabet=st.sampled_from('ab <>&`*_\n"\\é😀'), max_size=12_000)
names = st.text(alphabet=st.sampled_from("abc_xyz:<&"), min_size=1, max_size=400)
values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,  # JSON has no inf
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(names, inner, max_size=5),
    max_leaves=20,
)
arguments = st.dictionaries(names, values, max_size=200)
statuses = st.sampled_from(
    ["pending", "approved", "edited", "rejected", "answered", "expired", "cancelled"]
)
kinds = st.sampled_from(["approval", "manual", "hitl", "review"])
user_ids = st.sampled_from(["U1", "W22", "S333", "weird<id>", ""])


@st.composite
def cards_st(draw) -> CardInfo:
    kind = draw(kinds)
    args = draw(arguments)
    if kind == "review":
        args = {"reason": draw(text), "payload": draw(values)}
    return card(
        request_id=draw(st.text(alphabet="abcdef0123456789-", min_size=1, max_size=60)),
        tool_name=draw(names),
        agent_id=draw(names),
        kind=kind,
        arguments=args,
        status=draw(statuses),
        tool_description=draw(text),
        requester=draw(user_ids) or None,
        approvers=tuple(draw(st.lists(user_ids, max_size=600))),
        confirm=draw(st.booleans()),
        interrupted=draw(st.booleans()),
        decided_by=draw(user_ids) or None,
        decided_at=datetime(2030, 1, 1, tzinfo=UTC),
        reason=draw(st.none() | text),
        edited_arguments=draw(st.none() | arguments),
        output=draw(values),
        returns_object=draw(st.booleans()),
        allowed_decisions=tuple(
            draw(st.sets(st.sampled_from(["approve", "edit", "reject"]), min_size=1))
        ),
    )


@SETTINGS
@given(cards_st())
def test_cards_and_modals_never_break_limits(c: CardInfo) -> None:
    limits.validate_message(cards.request_card(c))
    limits.validate_message(messages.reminder(c, c.approvers))
    for build in (
        modals.edit_modal,
        modals.reject_modal,
        modals.answer_modal,
        modals.review_modal,
        modals.view_args_modal,
    ):
        limits.validate_view(build(c))


@SETTINGS
@given(arguments)
def test_parse_edit_round_trips_any_arguments(args: dict) -> None:
    c = card(arguments=args)
    view = modals.edit_modal(c)
    limits.validate_view(view)
    parsed, errors = modals.parse_edit(state_values(view), None, original=args)
    assert errors == {}
    assert parsed == args


@SETTINGS
@given(text, text, names, st.sampled_from(["running", "failed", "completed", "x"]))
def test_messages_never_break_limits(body: str, error: str, agent: str, status: str) -> None:
    r = run(request_text=body * 3, agent_id=agent, status=status, error=error, requester="U1")
    for m in (
        messages.root_message(r),
        messages.progress(body),
        *messages.final_answer(body * 20, r),
        *messages.final_answer(body * 20, r, truncated=True),
        messages.run_failed(r, error * 5),
        messages.ephemeral(body),
        messages.help_message(
            [AgentInfo(agent, body, tuple((agent, "approval", body) for _ in range(30)))] * 60
        ),
    ):
        limits.validate_message(m)


@SETTINGS
@given(st.lists(cards_st(), min_size=0, max_size=8), st.integers(0, 10_000), text)
def test_home_never_breaks_limits(pending: list, total: int, request: str) -> None:
    pending = pending * 70  # up to ~500 pending requests (duplicates are shown once)
    runs = [run(run_id=f"r{i}", request_text=request, agent_id=request[:300]) for i in range(40)]
    view = home.home_view(pending, total, runs, user_id="U1")
    limits.validate_view(view)


def test_home_with_500_distinct_pending() -> None:
    pending = [
        card(request_id=f"req_{i}", tool_name="t" * 300, arguments={"a": "x" * 10_000})
        for i in range(500)
    ]
    view = home.home_view(pending, 500, [], user_id="U1")
    limits.validate_view(view)
    assert len(view["blocks"]) <= 100


def test_cut_text_keeps_within_limit_and_says_how_much() -> None:
    assert limits.cut_text("short", 10) == "short"
    out = limits.cut_text(
        "x" * 5000, 100, note="… (cut: {n:,} more characters; use View full arguments)"
    )
    assert len(out) <= 100
    assert out.endswith("more characters; use View full arguments)")
    assert f"{5000 - out.index('…'):,}" in out
    assert len(limits.cut_text("x" * 50, 3)) <= 3
    # never split a mention or an entity
    assert "<@U1" not in limits.cut_text("a" * 60 + "<@U12345>" + "b" * 100, 90)


def test_helpers_build_valid_objects() -> None:
    assert limits.plain("", 10)["text"].strip()
    assert len(limits.mrkdwn("y" * 4000)["text"]) <= 3000
    b = limits.button("z" * 200, "approve", "req_1", style="primary")
    assert len(b["text"]["text"]) <= 75
    with pytest.raises(ValueError):
        limits.button("Approve", "approve", "r" * 2001)
    with pytest.raises(ValueError):
        limits.button("Approve", "a" * 256, "r")
    assert len(limits.block_id("actions", "x" * 400)) <= 255


def test_validators_reject_what_slack_rejects() -> None:
    ok = {"type": "section", "block_id": "a", "text": {"type": "mrkdwn", "text": "hi"}}
    limits.validate_message({"text": "t", "blocks": [ok]})
    bad_cases = [
        [ok] * 51,
        [ok, ok],  # duplicate block_id
        [{**ok, "text": {"type": "mrkdwn", "text": "x" * 3001}}],
        [{**ok, "text": {"type": "mrkdwn", "text": ""}}],
        [{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}],
        [{"type": "actions", "elements": [limits.button("b", f"a{i}", "v") for i in range(26)]}],
        [{"type": "actions", "elements": [{**limits.button("b", "a", "v"), "value": "v" * 2001}]}],
    ]
    for blocks in bad_cases:
        with pytest.raises(ValueError):
            limits.validate_message({"text": "t", "blocks": blocks})
    view = modals.reject_modal(card())
    with pytest.raises(ValueError):
        limits.validate_view({**view, "title": {"type": "plain_text", "text": "t" * 25}})
    with pytest.raises(ValueError):
        limits.validate_view({**view, "private_metadata": "m" * 3001})
    with pytest.raises(ValueError):
        modals.reject_modal(card(request_id="r" * 3001))
