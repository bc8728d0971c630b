"""Block Kit builders for sayso: pure functions from data to Slack dicts.

Slack's limits live in `limits`; every builder cuts user data there with a visible note.
"""

from bot.slack.blocks.cards import request_card, review_card
from bot.slack.blocks.data import AgentInfo, CardInfo, RunInfo
from bot.slack.blocks.home import home_view
from bot.slack.blocks.limits import validate_message, validate_view
from bot.slack.blocks.messages import (
    ephemeral,
    final_answer,
    help_message,
    progress,
    reminder,
    root_message,
    run_failed,
)
from bot.slack.blocks.modals import (
    answer_modal,
    edit_modal,
    parse_answer,
    parse_edit,
    parse_reason,
    parse_review,
    reject_modal,
    review_modal,
    view_args_modal,
)

__all__ = [
    "AgentInfo",
    "CardInfo",
    "RunInfo",
    "answer_modal",
    "edit_modal",
    "ephemeral",
    "final_answer",
    "help_message",
    "home_view",
    "parse_answer",
    "parse_edit",
    "parse_reason",
    "parse_review",
    "progress",
    "reject_modal",
    "reminder",
    "request_card",
    "review_card",
    "review_modal",
    "root_message",
    "run_failed",
    "validate_message",
    "validate_view",
    "view_args_modal",
]
