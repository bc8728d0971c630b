"""Contract names shared with Slack: action ids, callback ids, block ids and the slash command.

Slack sends these strings back in every interaction payload, and cards already posted keep
the ones they were built with: never change a value (add a new member instead). The Block
Kit builders and the listeners use these members; nothing else in `bot/slack` writes them out.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from bot.agent.vocabulary import ApprovalDecision, PersonAction

SLASH_COMMAND: Final = "/sayso"


class ActionId(StrEnum):
    """`action_id` of the interactive elements (buttons, and the inputs inside modals)."""

    APPROVE = "approve"
    EDIT = "edit"
    REJECT = "reject"
    ANSWER = "answer"
    REVIEW = "review"
    VIEW_ARGS = "view_args"
    RETRY = "retry"
    CANCEL = "cancel"
    """The kill switch on a run's root message (value: the run id)."""
    APPROVE_ALWAYS = "approve_always"
    """Approve, and allow the tool in this thread for a while (a standing approval)."""
    REVOKE = "revoke"
    """Revoke a standing approval (on its message in the thread)."""
    VALUE = "value"
    """Every input element of a modal (its block says which field it is)."""


class CallbackId(StrEnum):
    """`callback_id` of the views sayso opens or publishes."""

    EDIT = "sayso_edit"
    REJECT = "sayso_reject"
    ANSWER = "sayso_answer"
    REVIEW = "sayso_review"
    APPROVE = "sayso_approve"
    """Approve with a reason (tools and rules with `require_reason`)."""
    VIEW_ARGS = "sayso_view_args"
    HOME = "sayso_home"
    NOTICE = "sayso_notice"
    """A modal opened at once on a click (loading), then filled in or showing a refusal."""


class BlockId(StrEnum):
    """`block_id` of the blocks sayso builds.

    Members ending in `_PREFIX` are joined to a reference with `limits.block_id(prefix, ref)`
    (`prefix:ref`, e.g. `actions:<request id>`). The input blocks of the edit modal are named
    after the tool's arguments, so ids of other modal blocks carry a colon (`sayso:intro`)."""

    # approval request cards
    CARD_HEADER = "card_header"
    CARD_META = "card_meta"
    CARD_INTERRUPTED = "card_interrupted"
    CARD_ARGS = "card_args"
    CARD_DISPLAY = "card_display"
    """What the caller asked to show (an API request's `display`: a command, a diff), as code."""
    CARD_DEFAULTS = "card_defaults"
    CARD_CHANGES = "card_changes"
    CARD_REASON = "card_reason"
    CARD_ANSWER = "card_answer"
    CARD_REASON_FOR_REVIEW = "card_reason_for_review"
    CARD_QUORUM = "card_quorum"
    DECISION_PREFIX = "decision"
    ACTIONS_PREFIX = "actions"
    REMINDER_PREFIX = "reminder"
    ESCALATION_PREFIX = "escalation"
    GRANT_PREFIX = "grant"
    GRANT_ACTIONS_PREFIX = "grant_actions"
    AUTO_APPROVED = "auto_approved"
    # App Home
    HOME_CARD_PREFIX = "home_card"
    HOME_WAITING_HEADER = "home_waiting_header"
    HOME_WAITING_EMPTY = "home_waiting_empty"
    HOME_WAITING_MORE = "home_waiting_more"
    HOME_DIVIDER = "home_divider"
    HOME_RUNS_HEADER = "home_runs_header"
    HOME_RUNS_EMPTY = "home_runs_empty"
    HOME_RUNS_PREFIX = "home_runs"
    # thread and channel messages
    RUN_REQUEST = "run_request"
    RUN_STATUS = "run_status"
    RUN_ERROR = "run_error"
    RUN_HELP = "run_help"
    RUN_ACTIONS = "run_actions"
    RUN_CONTROLS = "run_controls"
    PROGRESS = "progress"
    RUN_ACTIVITY = "run_activity"  # the run's live status (its checklist of tool calls)
    CARD_ELSEWHERE_PREFIX = "card_elsewhere"  # side pane: the card is in the agent's channel
    ANSWER_PREFIX = "answer"
    ANSWER_FOOTER = "answer_footer"
    HELP_HEADER = "help_header"
    HELP_USAGE = "help_usage"
    HELP_EMPTY = "help_empty"
    HELP_MORE = "help_more"
    AGENT_PREFIX = "agent"
    EPHEMERAL = "ephemeral"
    # modals: their inputs (what the parsers read and field errors name) ...
    REASON_INPUT = "reason"
    ANSWER_INPUT = "answer"
    REVIEW_INPUT = "input"
    EDIT_REASON_INPUT = "sayso:reason"
    """The reason input of an edit that needs one (a colon: never an argument's name)."""
    # ... and the rest
    MODAL_INTRO = "sayso:intro"
    MODAL_INTERRUPTED = "sayso:interrupted"
    MODAL_KEPT = "sayso:kept"
    MODAL_EMPTY = "sayso:empty"
    MODAL_ARGS = "sayso:args"
    MODAL_PAYLOAD = "sayso:payload"
    MODAL_CUT = "sayso:cut"
    ARGS_PREFIX = "args"


BUTTON_DECISION: Final[dict[ActionId, PersonAction]] = {
    ActionId.APPROVE: "approve",
    ActionId.EDIT: "edit",
    ActionId.REJECT: "reject",
    ActionId.ANSWER: "answer",
    ActionId.REVIEW: "review",
}
"""The decision each button of a pending card stands for."""

DECISION_BUTTON: Final[dict[ApprovalDecision, ActionId]] = {
    "approve": ActionId.APPROVE,
    "edit": ActionId.EDIT,
    "reject": ActionId.REJECT,
}
"""The button of each approval decision, in the order cards show them."""

SUBMIT_DECISION: Final[dict[CallbackId, PersonAction]] = {
    CallbackId.EDIT: "edit",
    CallbackId.REJECT: "reject",
    CallbackId.ANSWER: "answer",
    CallbackId.REVIEW: "review",
    CallbackId.APPROVE: "approve",
}
"""The decision a submitted modal records."""
