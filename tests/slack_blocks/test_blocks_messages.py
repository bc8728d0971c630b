"""Thread messages and the home tab."""

from __future__ import annotations

from datetime import timedelta

from bot.slack.blocks import home, messages
from bot.slack.blocks.data import AgentInfo
from bot.slack.blocks.limits import validate_message, validate_view

from .helpers import WHEN, actions, card, run, text_of


def test_root_message_names_requester_agent_request_and_status() -> None:
    m = messages.root_message(run(request_text="deploy <v2> & more"))
    validate_message(m)
    text = text_of(m["blocks"])
    assert "<@U123>" in text and "*ops*" in text
    assert "deploy &lt;v2&gt; &amp; more" in text
    assert "Running" in text
    assert [b["block_id"] for b in m["blocks"]] == ["run_request", "run_status", "run_controls"]
    failed = messages.root_message(run(status="failed", error="boom"))
    assert "Failed" in text_of(failed["blocks"]) and "boom" in text_of(failed["blocks"])


def test_only_a_live_runs_root_message_has_the_cancel_button() -> None:
    for status in ("running", "waiting_for_human"):
        (button,) = actions(messages.root_message(run(status=status)))
        assert (button["action_id"], button["value"], button["style"]) == (
            "cancel",
            "run_1",
            "danger",
        )
        assert "confirm" in button
    for status in ("completed", "failed", "cancelled"):
        assert actions(messages.root_message(run(status=status))) == []


def test_cancelled_note_names_who_cancelled() -> None:
    m = messages.run_cancelled("U_ALICE")
    validate_message(m)
    assert "Cancelled by <@U_ALICE>" in text_of(m["blocks"])
    assert "Cancelled by ops-bot &lt;cli&gt;" in text_of(
        messages.run_cancelled("ops-bot <cli>")["blocks"]
    )


def test_progress_and_ephemeral() -> None:
    m = messages.progress("Calling <search>")
    validate_message(m)
    assert "Calling &lt;search&gt;" in text_of(m["blocks"])
    e = messages.ephemeral("Unknown agent `x`. Try /sayso help")
    validate_message(e)
    assert e["text"].startswith("Unknown agent")


def test_run_failed_has_retry_with_run_id() -> None:
    m = messages.run_failed(run(), "Model timed out after 60 s")
    validate_message(m)
    assert [(e["action_id"], e["value"]) for e in actions(m)] == [("retry", "run_1")]
    assert "Model timed out" in text_of(m["blocks"])


def test_help_message_lists_agents_and_tool_kinds() -> None:
    agents = [
        AgentInfo("ops", "Deploys things", (("deploy", "approval", "Deploy"), ("ask", "hitl", ""))),
        AgentInfo("support", "Refunds", (("refund", "manual", "Refund"),)),
    ]
    m = messages.help_message(agents)
    validate_message(m)
    text = text_of(m["blocks"])
    assert "/sayso <agent> <request>" in text
    assert "*ops*" in text and "`deploy` (needs approval)" in text and "(asks a person)" in text
    assert "`refund` (done by a person)" in text
    many = messages.help_message([AgentInfo(f"a{i}", "d" * 5000, ()) for i in range(80)])
    validate_message(many)
    assert "more agents" in text_of(many["blocks"])
    validate_message(messages.help_message([]))


def test_reminder_mentions_approvers() -> None:
    m = messages.reminder(card(), ["U1", "S2"])
    validate_message(m)
    assert "<@U1>, <!subteam^S2>" in text_of(m["blocks"])
    assert actions(m) == []


def test_home_view_lists_pending_newest_first_and_recent_runs() -> None:
    cards = [card(request_id=f"r{i}", created_at=WHEN + timedelta(minutes=i)) for i in range(3)]
    view = home.home_view(
        cards, 3, [run(permalink="https://x.slack.com/archives/C1/p1")], user_id="U1"
    )
    validate_view(view)
    assert view["type"] == "home"
    action_blocks = [b["block_id"] for b in view["blocks"] if b["type"] == "actions"]
    assert action_blocks == ["actions:r2", "actions:r1", "actions:r0"]
    assert [e["action_id"] for e in actions(view)][:3] == ["approve", "edit", "reject"]
    text = text_of(view["blocks"])
    assert "Your recent runs" in text and "<https://x.slack.com/archives/C1/p1|thread>" in text


def test_home_view_500_pending_shows_and_n_more() -> None:
    cards = [card(request_id=f"r{i}", arguments={"x": "y" * 2000}) for i in range(500)]
    runs = [run(run_id=f"run{i}") for i in range(50)]
    view = home.home_view(cards, 1200, runs, user_id="U1")
    validate_view(view)
    shown = sum(1 for b in view["blocks"] if b["type"] == "actions")
    assert f"and {1200 - shown:,} more waiting" in text_of(view["blocks"])


def test_home_view_empty_state() -> None:
    view = home.home_view([], 0, [], user_id="U1")
    validate_view(view)
    text = text_of(view["blocks"])
    assert "Nothing is waiting for <@U1>" in text and "No runs yet" in text
