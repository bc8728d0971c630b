"""Approval request cards: one per pending call or review pause, in any status."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.agent.vocabulary import ALL_APPROVAL_DECISIONS, RequestKind
from bot.slack.blocks import limits as L
from bot.slack.blocks.data import CardInfo
from bot.slack.blocks.fmt import (
    compact_json,
    mention,
    mention_list,
    one_line,
    pretty_json,
    slack_date,
    utc,
    who_may_decide,
)
from bot.slack.blocks.markdown import markdown_block
from bot.slack.blocks.standing import approve_always_button
from bot.slack.ids import DECISION_BUTTON, ActionId, BlockId

PENDING_TITLE: dict[RequestKind, tuple[str, str]] = {
    "approval": (":raising_hand:", "Approval needed"),
    "manual": (":hammer_and_wrench:", "Manual step needed"),
    "hitl": (":question:", "A question for you"),
    "review": (":eyes:", "Review needed"),
}
INTERRUPTED = (
    ":warning: *Interrupted: the process stopped while this tool was running.* It may have "
    "partly run. "
    "Check its effects before you decide: approving runs it again."
)
DONE_TITLE: dict[RequestKind, str] = {
    "approval": "Approval request",
    "manual": "Manual step",
    "hitl": "Question",
    "review": "Review",
}
VIEW_ARGS_TEXT = "View full arguments"


def _q(text: str) -> str:
    """Inline code for a short value (backticks would end the code span)."""
    return "`" + L.escape(text.replace("`", "ˋ")) + "`"


def quote(raw: str, limit: int = L.SECTION_TEXT, note: str = L.CUT_NOTE) -> str:
    """Escaped text as a mrkdwn block quote, cut to `limit`."""
    lines = L.escape(L.nonempty(raw)).split("\n")
    return L.cut_text("\n".join("> " + line for line in lines), limit, note)


_APPROVAL_BUTTON: dict[ActionId, tuple[str, str | None]] = {
    ActionId.APPROVE: ("Approve", "primary"),
    ActionId.EDIT: ("Edit", None),
    ActionId.REJECT: ("Reject", "danger"),
}


def _approval_button(card: CardInfo, action_id: ActionId) -> dict[str, Any]:
    text, style = _APPROVAL_BUTTON[action_id]
    confirm = None
    if action_id is ActionId.APPROVE and card.confirm and not card.require_reason:
        confirm = L.confirm_dialog(
            f"Run {card.tool_name}?",
            f"Approving runs {_q(card.tool_name)} with the arguments shown.",
            "Approve",
        )
    return L.button(text, action_id, card.request_id, style=style, confirm=confirm)


def view_args_button(request_id: str) -> dict[str, Any]:
    return L.button(VIEW_ARGS_TEXT, ActionId.VIEW_ARGS, request_id)


def actions_block(request_id: str, elements: list[dict[str, Any]]) -> dict[str, Any]:
    """The buttons of one approval request (on its card or on App Home)."""
    return {
        "type": "actions",
        "block_id": L.block_id(BlockId.ACTIONS_PREFIX, request_id),
        "elements": elements,
    }


def decision_buttons(card: CardInfo, args_cut: bool = False) -> list[dict[str, Any]]:
    """The buttons of a pending card; value is always the request id."""
    rid = card.request_id
    out: list[dict[str, Any]] = []
    if card.kind == "review":
        out.append(L.button("Review", ActionId.REVIEW, rid, style="primary"))
    elif card.kind in ("manual", "hitl"):
        label = "Enter result" if card.kind == "manual" else "Answer"
        out.append(L.button(label, ActionId.ANSWER, rid, style="primary"))
    else:
        allowed = card.allowed_decisions or ALL_APPROVAL_DECISIONS
        out.extend(
            _approval_button(card, DECISION_BUTTON[decision])
            for decision in ALL_APPROVAL_DECISIONS
            if decision in allowed
        )
        always = approve_always_button(card) if "approve" in allowed else None
        if always is not None:
            out.insert(1, always)
    if args_cut:
        out.append(view_args_button(rid))
    return out


def _title(card: CardInfo) -> tuple[str, str]:
    emoji, title = PENDING_TITLE.get(card.kind, PENDING_TITLE["approval"])
    if card.status != "pending":
        title = DONE_TITLE.get(card.kind, "Approval request")
    return emoji, title


def _header(card: CardInfo) -> dict[str, Any]:
    emoji, title = _title(card)
    if card.kind == "review":
        text = f"{emoji} *{title}* for agent *{L.escape(card.agent_id)}*"
    else:
        text = f"{emoji} *{title}*: {_q(card.tool_name)} for agent *{L.escape(card.agent_id)}*"
    if card.tool_description and card.kind != "review":
        shown = L.caller_text if _from_caller(card) else L.escape
        text += "\n" + shown(L.cut_text(one_line(card.tool_description), 500))
    return L.section(text, BlockId.CARD_HEADER)


def _from_caller(card: CardInfo) -> bool:
    """An approval API request: its text is the caller's, shown as plain text."""
    return card.agent_id.startswith("api:")


def _asked_by(card: CardInfo) -> str:
    if not card.requester:
        return "Asked by the agent"
    if _from_caller(card):  # the caller's word for it: shown, never a mention
        return f"Asked for {L.caller_text(card.requester)} (as the caller says)"
    return f"Asked by {mention(card.requester)}"


def _meta(card: CardInfo, now: datetime | None) -> dict[str, Any]:
    parts = [_asked_by(card)]
    if card.status == "pending":
        if card.expires_at:
            past = now is not None and utc(card.expires_at) <= utc(now)
            parts.append(f"{'Expired' if past else 'Expires'} {slack_date(card.expires_at)}")
        parts.append(f"Who may decide: {who_may_decide(card.approvers)}")
        if card.rule:
            parts.append(f"Rule: {L.escape(card.rule)}")
        if card.escalated_at:
            called = mention_list(card.escalate_to)
            parts.append(f":arrow_double_up: Escalated to {called} {slack_date(card.escalated_at)}")
        if card.kind == "review":
            parts.append("Click *Review* to respond, or reply in this thread.")
    return L.context(parts, BlockId.CARD_META)


def quorum_line(card: CardInfo) -> str:
    """Progress towards the quorum: "1 of 2 approvals: ✅ <@U1> · waiting for 1 more from …"."""
    got = len(card.approvals)
    text = f"{got} of {card.min_approvals} approvals"
    if card.approvals:
        text += ": " + " ".join(f"✅ {mention(a)}" for a in card.approvals)
    missing = max(0, card.min_approvals - got)
    return text + f" · waiting for {missing} more from {who_may_decide(card.approvers)}"


def _decided_by(card: CardInfo) -> str:
    out = f" by {mention(card.decided_by)}" if card.decided_by else ""
    if len(card.approvals) > 1 and card.status in ("approved", "edited"):
        out = f" by {mention_list(card.approvals)}"
    if card.decided_at:
        out += f" {slack_date(card.decided_at)}"
    return out


def decision_line(card: CardInfo) -> str:
    """One line saying who decided, how and when."""
    by = _decided_by(card)
    s = card.status
    if s == "approved":
        return f":white_check_mark: *Approved*{by}"
    if s == "edited":
        return f":pencil2: *Approved with edits*{by}"
    if s == "rejected":
        return f":x: *Rejected*{by}"
    if s == "answered":
        verb = {"review": "Reviewed", "manual": "Result given"}.get(card.kind, "Answered")
        return f":speech_balloon: *{verb}*{by}"
    if card.agent_id.startswith("api:"):  # an approval API request: its caller, no model
        if s == "expired":
            return ":hourglass: Expired — nobody decided in time; the caller was told"
        if s == "cancelled":
            why = f" — {L.escape(card.reason)}" if card.reason else ""
            return f":no_entry_sign: *Cancelled* by the caller{why}"
    if s == "expired":
        return ":hourglass: Expired — the model was told the request expired"
    if s == "cancelled":
        return f":no_entry_sign: *Cancelled*{by} — the run was cancelled"
    return f"Status: {L.escape(s)}{by}"


def changes_text(old: dict[str, Any], new: dict[str, Any]) -> str:
    """`key`: old -> new for each changed top-level argument."""
    lines = []
    for key in list(dict.fromkeys([*old, *new])):
        if key in old and key in new and old[key] == new[key]:
            continue
        before = L.cut_text(compact_json(old[key]), 300) if key in old else "(not set)"
        after = L.cut_text(compact_json(new[key]), 300) if key in new else "(not set)"
        lines.append(f"• {_q(L.cut_text(key, 100))}: {_q(before)} → {_q(after)}")
    return "\n".join(lines) if lines else "No argument changed."


def _output_text(output: Any, limit: int = L.SECTION_TEXT) -> str:
    if isinstance(output, str):
        return quote(output, limit)
    return L.code_block(pretty_json(output), limit)[0]


def _decision_blocks(card: CardInfo) -> list[dict[str, Any]]:
    rid = card.request_id
    blocks = [L.section(decision_line(card), L.block_id(BlockId.DECISION_PREFIX, rid))]
    if card.status == "edited" and card.edited_arguments is not None:
        text = "*Changed:*\n" + changes_text(card.arguments, card.edited_arguments)
        blocks.append(L.section(text, BlockId.CARD_CHANGES))
        if card.reason:
            blocks.append(L.section("*Reason:*\n" + quote(card.reason, 2900), BlockId.CARD_REASON))
    elif card.status == "approved" and card.reason:
        blocks.append(L.section("*Reason:*\n" + quote(card.reason, 2900), BlockId.CARD_REASON))
    elif card.status == "rejected":
        reason = quote(card.reason, 2900) if card.reason else "_No reason given._"
        blocks.append(L.section("*Reason:*\n" + reason, BlockId.CARD_REASON))
    elif card.status == "answered" and card.output is not None:
        blocks.append(
            L.section("*Answer:*\n" + _output_text(card.output, 2900), BlockId.CARD_ANSWER)
        )
    return blocks


def _closing(card: CardInfo, args_cut: bool) -> list[dict[str, Any]]:
    """Buttons while pending; the decision once decided (only View full arguments stays)."""
    rid = card.request_id
    if card.status == "pending":
        return [actions_block(rid, decision_buttons(card, args_cut))]
    blocks = _decision_blocks(card)
    if args_cut:
        blocks.append(actions_block(rid, [view_args_button(rid)]))
    return blocks


def _fallback(card: CardInfo) -> str:
    _, title = _title(card)
    text = f"{title}: {card.tool_name} for agent {card.agent_id}"
    if card.status != "pending":
        text += f" ({card.status})"
    return L.cut_text(L.escape(one_line(text)), L.MESSAGE_TEXT)


def _question(card: CardInfo) -> str | None:
    """A hitl call's only argument when it is text (the question), else None."""
    if card.kind != "hitl" or len(card.arguments) != 1:
        return None
    (value,) = card.arguments.values()
    return value.strip() if isinstance(value, str) and value.strip() else None


def request_card(card: CardInfo, *, now: datetime | None = None) -> dict[str, Any]:
    """The card of one approval request, in any status."""
    if card.kind == "review":
        return review_card(card, now=now)
    blocks = [_header(card)]
    if card.display:
        blocks.append(_display(card.display))
    if card.interrupted and card.status == "pending":
        blocks.append(L.section(INTERRUPTED, BlockId.CARD_INTERRUPTED))
    edited_pending = card.status == "pending" and card.edited_arguments is not None
    shown = card.edited_arguments if edited_pending else card.arguments
    question = _question(card)
    if question is not None and not edited_pending and _from_caller(card):
        cut = False
        blocks.append(L.section(L.caller_text(L.cut_text(question, 2900)), BlockId.CARD_ARGS))
    elif question is not None and not edited_pending:  # a question the model wrote: Markdown
        cut = len(question) > L.MARKDOWN_TEXT - 200
        blocks.append(
            markdown_block(
                question, BlockId.CARD_ARGS, requester=card.requester, limit=L.MARKDOWN_TEXT - 200
            )
        )
    else:
        args, cut = L.code_block(pretty_json(shown), L.SECTION_TEXT, L.ARGS_CUT_NOTE)
        blocks.append(L.section(args, BlockId.CARD_ARGS))
    if edited_pending and card.edited_arguments is not None:
        text = "*Edited (approvals start again):*\n" + changes_text(
            card.arguments, card.edited_arguments
        )
        blocks.append(L.section(text, BlockId.CARD_CHANGES))
    if card.defaults:
        blocks.append(L.section(defaults_text(card.defaults), BlockId.CARD_DEFAULTS))
    blocks.append(_meta(card, now))
    if card.min_approvals > 1 and card.status == "pending":
        blocks.append(L.context([quorum_line(card)], BlockId.CARD_QUORUM))
    blocks.extend(_closing(card, cut))
    return {"text": _fallback(card), "blocks": blocks}


def _display(raw: str) -> dict[str, Any]:
    """A caller's `display` as a code block: its text is shown as written, never as mrkdwn
    (one fence around it, if the caller sent one, is dropped)."""
    body = raw.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        body = body[3:-3].strip("\n")
    text, _ = L.code_block(body, L.SECTION_TEXT, L.CUT_NOTE)
    return L.section(text, BlockId.CARD_DISPLAY)


def defaults_text(defaults: dict[str, Any]) -> str:
    """The parameters the model left out, as they will run: `replicas: 2` (default)."""
    lines = [
        f"• {_q(L.cut_text(key, 100) + ': ' + L.cut_text(compact_json(value), 300))} (default)"
        for key, value in defaults.items()
    ]
    return L.cut_text("*Also runs with:*\n" + "\n".join(lines), L.SECTION_TEXT)


def payload_text(payload: Any) -> tuple[str, bool]:
    """A review's payload: text as a block quote, anything else as JSON; (mrkdwn, was cut)."""
    if isinstance(payload, str):
        cut = len(L.escape(payload)) + 2 * (payload.count("\n") + 1) > L.SECTION_TEXT
        return quote(payload, L.SECTION_TEXT, L.ARGS_CUT_NOTE), cut
    return L.code_block(pretty_json(payload), L.SECTION_TEXT, L.ARGS_CUT_NOTE)


def review_card(card: CardInfo, *, now: datetime | None = None) -> dict[str, Any]:
    """A human review pause: the reason and the payload (e.g. a draft), and a Review button."""
    args = card.arguments if isinstance(card.arguments, dict) else {}
    reason = args.get("reason")
    payload = args.get("payload")
    blocks = [_header(card)]
    if reason:
        blocks.append(L.section("*Why:* " + L.escape(str(reason)), BlockId.CARD_REASON_FOR_REVIEW))
    cut = False
    if isinstance(payload, str) and payload.strip():  # a draft the model wrote: Markdown
        limit = L.MARKDOWN_TEXT - 200
        cut = len(payload.strip()) > limit
        blocks.append(
            markdown_block(payload, BlockId.CARD_ARGS, requester=card.requester, limit=limit)
        )
    elif payload is not None and payload != "":
        text, cut = payload_text(payload)
        blocks.append(L.section(text, BlockId.CARD_ARGS))
    blocks.append(_meta(card, now))
    blocks.extend(_closing(card, cut))
    return {"text": _fallback(card), "blocks": blocks}
