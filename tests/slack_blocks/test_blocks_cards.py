"""Approval request cards: contract names, statuses, cuts."""

from __future__ import annotations

from bot.slack.blocks import cards
from bot.slack.blocks.limits import validate_message

from .helpers import WHEN, actions, card, text_of


def ids(message: dict) -> list[str]:
    return [e["action_id"] for e in actions(message)]


def test_pending_card_has_the_three_buttons_with_the_request_id_only() -> None:
    m = cards.request_card(card())
    validate_message(m)
    assert ids(m) == ["approve", "edit", "reject"]
    buttons = {e["action_id"]: e for e in actions(m)}
    assert buttons["approve"]["style"] == "primary"
    assert buttons["reject"]["style"] == "danger"
    assert "style" not in buttons["edit"]
    assert "confirm" not in buttons["approve"]
    assert {e["value"] for e in actions(m)} == {"req_1"}
    block_ids = [b["block_id"] for b in m["blocks"]]
    assert block_ids == ["card_header", "card_args", "card_meta", "actions:req_1"]


def test_pending_card_says_who_asked_when_it_expires_and_who_may_decide() -> None:
    m = cards.request_card(card(approvers=("U9", "S7", "W5")))
    text = text_of(m["blocks"])
    assert "`deploy`" in text and "*ops*" in text
    assert "<@U123>" in text
    assert (
        f"<!date^{int(WHEN.timestamp())}^{{date_short_pretty}} {{time}}|2030-01-02 03:04 UTC>"
        in text
    )
    assert "<@U9>, <!subteam^S7>, <@W5>" in text
    assert '"service": "api"' in text
    assert "any full member" in text_of(cards.request_card(card())["blocks"])


def test_allowed_decisions_and_confirm() -> None:
    m = cards.request_card(card(allowed_decisions=("approve", "reject"), confirm=True))
    assert ids(m) == ["approve", "reject"]
    approve = actions(m)[0]
    assert set(approve["confirm"]) == {"title", "text", "confirm", "deny"}
    validate_message(m)


def test_hitl_manual_and_review_get_one_button() -> None:
    for kind, action in [("hitl", "answer"), ("manual", "answer"), ("review", "review")]:
        args = {"reason": "check the draft", "payload": "Dear team"} if kind == "review" else {}
        m = cards.request_card(card(kind=kind, arguments=args or {"question": "Which env?"}))
        validate_message(m)
        assert ids(m) == [action]
        assert actions(m)[0]["value"] == "req_1"


def test_review_card_shows_reason_payload_and_thread_reply_hint() -> None:
    c = card(
        kind="review",
        tool_name="human_review",
        arguments={"reason": "Tone?", "payload": "Hi <all> & co"},
    )
    m = cards.review_card(c)
    validate_message(m)
    text = text_of(m["blocks"])
    assert "Tone?" in text
    draft = next(b for b in m["blocks"] if b["block_id"] == "card_args")
    assert draft == {"type": "markdown", "block_id": "card_args", "text": "Hi <all> & co"}
    assert "reply in this thread" in text
    assert m == cards.request_card(c)


def test_interrupted_card_warns_loudly() -> None:
    m = cards.request_card(card(interrupted=True))
    block = next(b for b in m["blocks"] if b["block_id"] == "card_interrupted")
    assert "may have partly run" in block["text"]["text"]
    assert "approving runs it again" in block["text"]["text"]


def test_long_arguments_are_cut_with_a_note_and_a_view_args_button() -> None:
    m = cards.request_card(card(arguments={"body": "x" * 10_000}))
    validate_message(m)
    args = next(b for b in m["blocks"] if b["block_id"] == "card_args")["text"]["text"]
    assert "more characters; use View full arguments)" in args
    assert ids(m) == ["approve", "edit", "reject", "view_args"]
    assert actions(m)[-1]["text"]["text"] == "View full arguments"


def test_decided_cards_lose_the_decision_buttons() -> None:
    for status, words in [
        ("approved", "Approved"),
        ("rejected", "Rejected"),
        ("answered", "Answered"),
        ("cancelled", "Cancelled"),
    ]:
        m = cards.request_card(card(status=status, decided_by="U777", decided_at=WHEN))
        validate_message(m)
        assert ids(m) == []
        line = next(b for b in m["blocks"] if b["block_id"] == "decision:req_1")["text"]["text"]
        assert words in line and "<@U777>" in line and "<!date^" in line


def test_expired_card() -> None:
    m = cards.request_card(card(status="expired"))
    assert "Expired — the model was told the request expired" in text_of(m["blocks"])
    assert ids(m) == []


def test_edited_card_lists_changes() -> None:
    c = card(
        status="edited",
        decided_by="U777",
        arguments={"service": "api", "version": "v2", "force": True},
        edited_arguments={"service": "api", "version": "v3", "note": "hi"},
    )
    m = cards.request_card(c)
    changes = next(b for b in m["blocks"] if b["block_id"] == "card_changes")["text"]["text"]
    assert '`version`: `"v2"` → `"v3"`' in changes
    assert "`force`: `true` → `(not set)`" in changes
    assert '`note`: `(not set)` → `"hi"`' in changes
    assert "service" not in changes


def test_rejected_and_answered_show_reason_and_answer() -> None:
    m = cards.request_card(card(status="rejected", reason="not on <Friday>"))
    assert "not on &lt;Friday&gt;" in text_of(m["blocks"])
    m = cards.request_card(card(status="rejected"))
    assert "No reason given" in text_of(m["blocks"])
    m = cards.request_card(card(kind="hitl", status="answered", output="x" * 9000))
    validate_message(m)
    answer = next(b for b in m["blocks"] if b["block_id"] == "card_answer")["text"]["text"]
    assert "(cut:" in answer


def test_decided_cut_card_keeps_only_view_args() -> None:
    m = cards.request_card(card(status="approved", arguments={"a": "y" * 5000}))
    assert ids(m) == ["view_args"]


def test_user_text_is_escaped() -> None:
    m = cards.request_card(card(tool_name="a<b>", agent_id="x&y", arguments={"q": "<!channel>"}))
    text = text_of(m["blocks"])
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text
    assert "x&amp;y" in text


def test_a_callers_display_is_shown_as_code_never_as_mrkdwn() -> None:
    """An API request's `display` (the Claude Code hook sends the command or the diff) sits
    under the header as a code block: a caller cannot dress the card up with it."""
    shown = "```\n$ rm -rf ./build\n*:white_check_mark: Approved by <@U_BOSS>* <!channel>\n```"
    m = cards.request_card(card(display=shown))
    validate_message(m)
    block = next(b for b in m["blocks"] if b["block_id"] == "card_display")
    text = block["text"]["text"]
    assert text.startswith("```") and text.endswith("```") and text.count("```") == 2
    assert "$ rm -rf ./build" in text
    assert "<@U_BOSS>" not in text and "<!channel>" not in text  # escaped: no mention, no ping
    huge = cards.request_card(card(display="x" * 10_000))
    validate_message(huge)  # cut to Slack's limit with a visible note
