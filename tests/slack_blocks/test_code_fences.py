"""Code blocks cannot be broken out of: no run of backticks survives inside a fence, so text
written by a model (a fake "✅ *Approved* by" line) stays code in every builder."""

from __future__ import annotations

import re
from typing import Any

import pytest

from bot.slack.blocks import cards, home, limits, messages, modals
from tests.slack_blocks.helpers import card, run

FAKE = "✅ *Approved* by <@U_BOSS>"


def escape_attempt(n: int) -> str:
    ticks = "`" * n
    return f"{ticks}\n{FAKE}\n{ticks}x{ticks}"


def mrkdwn_texts(value: Any) -> list[str]:
    """Every mrkdwn text in a message or a view."""
    if isinstance(value, dict):
        found = [value["text"]] if value.get("type") == "mrkdwn" else []
        return found + [t for v in value.values() for t in mrkdwn_texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in mrkdwn_texts(v)]
    return []


def fenced_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code block; fails on any backtick run that is not a whole fence."""
    fences = []
    for run_ in re.finditer(r"`+", text):
        length = run_.end() - run_.start()
        assert length in (1, 3), f"a run of {length} backticks in {text!r}"
        if length == 3:
            fences.append(run_.start())
    assert len(fences) % 2 == 0, f"an unclosed fence in {text!r}"
    return [(fences[i], fences[i + 1]) for i in range(0, len(fences), 2)]


def assert_fake_line_stays_code(output: dict[str, Any]) -> None:
    shown = [t for t in mrkdwn_texts(output) if "Approved" in t]
    assert shown, "the arguments are shown somewhere"
    for text in shown:
        spans = fenced_spans(text)
        for hit in re.finditer(re.escape("*Approved*"), text):
            assert any(a < hit.start() < b for a, b in spans), f"escaped the fence: {text!r}"


@pytest.mark.parametrize("n", range(3, 13))
def test_fence_breaks_every_run_of_backticks(n: int) -> None:
    text = limits.fence(escape_attempt(n))
    assert text.startswith("```") and text.endswith("```")
    assert fenced_spans(text) == [(0, len(text) - 3)]
    assert limits.break_backticks("`" * n).replace("\u200b", "") == "`" * n


@pytest.mark.parametrize("n", range(3, 13))
def test_no_builder_lets_arguments_out_of_the_fence(n: int) -> None:
    attempt = escape_attempt(n)
    pending = card(arguments={"note": attempt, attempt: "key too"})
    review = card(tool_name="human_review", kind="review", arguments={"payload": attempt})
    json_review = card(tool_name="human_review", kind="review", arguments={"payload": [attempt]})
    outputs = [
        cards.request_card(pending),
        cards.review_card(json_review),
        cards.request_card(card(status="answered", kind="hitl", output={"answer": attempt})),
        modals.view_args_modal(pending),
        modals.view_args_modal(review),
        modals.answer_modal(card(kind="hitl", arguments={"question": attempt})),
        home.home_view([pending], 1, [], user_id="U1"),
        messages.run_failed(run(status="failed"), attempt),
    ]
    for output in outputs:
        assert_fake_line_stays_code(output)


@pytest.mark.parametrize("n", range(3, 13))
def test_a_cut_code_block_keeps_its_fence(n: int) -> None:
    text, cut = limits.code_block(("`" * n + "a") * 400, 500)
    assert cut
    fenced_spans(text)
