"""Thread and channel messages: the run's root message, progress, answers, failures, help."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.slack.blocks import limits as L
from bot.slack.blocks.cards import _q
from bot.slack.blocks.data import AgentInfo, CardInfo, RunInfo, WhoApproves
from bot.slack.blocks.fmt import (
    KIND_LABEL,
    RUN_STATUS,
    mention,
    mention_list,
    one_line,
    slack_date,
)
from bot.slack.blocks.markdown import markdown_messages
from bot.slack.ids import ActionId, BlockId

USAGE = "`/sayso <agent> <request>` — for example `/sayso ops deploy v2 to staging`"


def _msg(text: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"text": L.cut_text(L.nonempty(one_line(text)), L.MESSAGE_TEXT), "blocks": blocks}


def run_status_text(status: str) -> str:
    """Emoji and label for a run status."""
    emoji, label = RUN_STATUS.get(status, (":grey_question:", status.replace("_", " ")))
    return f"{emoji} {L.escape(label)}"


def root_message(run: RunInfo) -> dict[str, Any]:
    """The message that starts a run's thread: who asked which agent for what, and the status."""
    who = mention(run.requester) if run.requester else "Someone"
    request = L.escape(L.nonempty(run.request_text.strip(), "(no request text)"))
    head = f"{who} asked *{L.escape(run.agent_id)}*:\n"
    text = head + L.cut_text("> " + request.replace("\n", "\n> "), L.SECTION_TEXT - len(head))
    status = [f"Status: {run_status_text(run.status)}"]
    if run.activity:
        status.append(L.cut_text(run.activity, 500))
    if run.status == "running" and run.queued_ahead > 0:
        ahead = f"{run.queued_ahead} run{'s' if run.queued_ahead != 1 else ''} ahead"
        status = [f"Status: :hourglass: Queued: {ahead}"]
    if run.status == "failed" and run.error:
        status.append(L.escape(L.cut_text(one_line(run.error), 500)))
    if run.created_at:
        status.append(f"Started {slack_date(run.created_at)}")
    blocks = [L.section(text, BlockId.RUN_REQUEST), L.context(status, BlockId.RUN_STATUS)]
    if run.status in ("running", "waiting_for_human"):
        blocks.append(_controls(run))
    fallback = f"{run.agent_id}: {run.request_text} ({run.status.replace('_', ' ')})"
    return _msg(L.escape(fallback), blocks)


def _controls(run: RunInfo) -> dict[str, Any]:
    """The kill switch: Cancel stops the run before its next tool and closes its requests."""
    confirm = L.confirm_dialog(
        "Cancel this run?",
        "No further tool runs and its open requests close. This cannot be undone.",
        "Cancel the run",
        "Keep it",
    )
    cancel = L.button("Cancel", ActionId.CANCEL, run.run_id, style="danger", confirm=confirm)
    return {"type": "actions", "block_id": BlockId.RUN_CONTROLS, "elements": [cancel]}


def run_cancelled(by: str) -> dict[str, Any]:
    """The note in the thread of a cancelled run: who cancelled it (a user id or a name)."""
    who = mention(L.cut_text(by, 100))
    text = f":no_entry_sign: Cancelled by {who}: no further tool runs."
    return _msg(text, [L.context([text], BlockId.PROGRESS)])


def progress(text: str) -> dict[str, Any]:
    """A short progress note in the thread (e.g. "Calling search…")."""
    body = L.escape(L.nonempty(text.strip(), "Working…"))
    return _msg(body, [L.context([L.cut_text(body, L.CONTEXT_TEXT)], BlockId.PROGRESS)])


def final_answer(text: str, run: RunInfo, *, truncated: bool = False) -> list[dict[str, Any]]:
    """The agent's final answer as Markdown: one message, or several for a long answer.

    The last message ends with a footer (who it is for, which agent; a cut-off answer says so).
    """
    text = text.strip() or "(The agent finished without an answer.)"
    posted = markdown_messages(text, BlockId.ANSWER_PREFIX, requester=run.requester)
    who = f"for {mention(run.requester)} " if run.requester else ""
    footer = [f":white_check_mark: Done {who}by *{L.escape(run.agent_id)}*"]
    if truncated:
        footer = [
            ":warning: *The answer was cut off*: the model reached its output limit. "
            f"Ask for less, or raise the agent's max_tokens. (by *{L.escape(run.agent_id)}*)"
        ]
    posted[-1]["blocks"].append(L.context(footer, BlockId.ANSWER_FOOTER))
    return posted


def run_failed(run: RunInfo, error: str) -> dict[str, Any]:
    """A failed run: what failed, the error, and a Retry button (value = run id)."""
    head = f":x: *The run failed* (agent *{L.escape(run.agent_id)}*).\n"
    err, _ = L.code_block(L.nonempty(error.strip(), "unknown error"), L.SECTION_TEXT - len(head))
    blocks = [
        L.section(head + err, BlockId.RUN_ERROR),
        L.context(
            ["Click *Retry* to run the request again, or start a new one."], BlockId.RUN_HELP
        ),
        {
            "type": "actions",
            "block_id": BlockId.RUN_ACTIONS,
            "elements": [L.button("Retry", ActionId.RETRY, run.run_id, style="primary")],
        },
    ]
    return _msg(L.escape(f"The run failed: {error}"), blocks)


def _who_approves(who: WhoApproves) -> str:
    """`approval (by rule): <!subteam^S1>, 2 approvals` or `└ production: …`."""
    people = mention_list(who.approvers, 300) if who.approvers else "any full member"
    count = f", {who.min_approvals} approvals" if who.min_approvals > 1 else ""
    if who.rule is not None:
        return f"└ {L.escape(who.rule)}: {people}{count}"
    when = f" ({L.escape(who.when)})" if who.when and who.when != "always" else ""
    return f"approval{when}: {people}{count}"


def _agent_text(agent: AgentInfo) -> str:
    lines = [f"*{L.escape(agent.agent_id)}* — {L.escape(one_line(agent.description))}"]
    for name, kind, desc in agent.tools:
        label = KIND_LABEL.get(kind, L.escape(kind))
        line = f"• {_q(name)} ({label})"
        if desc:
            line += " — " + L.escape(L.cut_text(one_line(desc), 200))
        for who in (agent.approvals or {}).get(name, ()):
            line += "\n    " + _who_approves(who)
        lines.append(line)
    return "\n".join(lines)


def help_message(agents: Sequence[AgentInfo]) -> dict[str, Any]:
    """How to use sayso, and each agent with its tools and their kinds."""
    blocks: list[dict[str, Any]] = [
        {
            "type": "header",
            "block_id": BlockId.HELP_HEADER,
            "text": L.plain("sayso", L.HEADER_TEXT),
        },
        L.section(
            f"Start a run with {USAGE}.\nTools that need a person post a card in the run's "
            "thread with *Approve*, *Edit* and *Reject*; you can also reply in the thread.",
            BlockId.HELP_USAGE,
        ),
    ]
    if not agents:
        blocks.append(L.section("No agents are configured yet.", BlockId.HELP_EMPTY))
    room = L.MESSAGE_BLOCKS - len(blocks) - 1
    shown = agents[:room] if len(agents) > room + 1 else agents
    for i, agent in enumerate(shown):
        blocks.append(L.section(_agent_text(agent), L.block_id(BlockId.AGENT_PREFIX, str(i))))
    if len(agents) > len(shown):
        more = len(agents) - len(shown)
        blocks.append(L.context([f"… and {more:,} more agents."], BlockId.HELP_MORE))
    return _msg(f"How to use sayso: /sayso <agent> <request>. {len(agents)} agents.", blocks)


def ephemeral(text: str) -> dict[str, Any]:
    """A message only one person sees (the listener adds response_type / user)."""
    body = L.escape(L.nonempty(text.strip(), "…"))
    return _msg(body, [L.section(body, BlockId.EPHEMERAL)])


def card_elsewhere(card: CardInfo, channel: str, permalink: str | None) -> dict[str, Any]:
    """In the side pane: the card needs someone else, so it is in the agent's channel."""
    who = mention_list(card.approvers) if card.approvers else "a teammate"
    where = f"<{permalink}|the card> in <#{channel}>" if permalink else f"the card in <#{channel}>"
    text = (
        f":raised_hand: {_q(card.tool_name)} needs a decision by {who}: "
        f"{where} waits for them. I carry on here once they decide."
    )
    fallback = f"{card.tool_name} needs a decision: the card is in another channel."
    return _msg(
        L.escape(fallback), [L.section(text, L.block_id(BlockId.REMINDER_PREFIX, card.request_id))]
    )


def escalation(card: CardInfo) -> dict[str, Any]:
    """The request is still undecided: the escalation group is called in and may decide."""
    who = mention_list(card.escalate_to) if card.escalate_to else "Anyone here"
    what = "a review" if card.kind == "review" else _q(card.tool_name)
    text = (
        f":arrow_double_up: *Escalated:* {who}: {what} for agent *{L.escape(card.agent_id)}* "
        "has waited too long. You may decide it now: use the card in this thread."
    )
    fallback = f"Escalated: {card.tool_name} for {card.agent_id} is waiting for a decision."
    return _msg(
        L.escape(fallback),
        [L.section(text, L.block_id(BlockId.ESCALATION_PREFIX, card.request_id))],
    )


def reminder(card: CardInfo, approvers: Sequence[str]) -> dict[str, Any]:
    """A nudge to the approvers that a request is still waiting (no buttons: use the card)."""
    who = mention_list(approvers) if approvers else "Anyone here"
    what = "a review" if card.kind == "review" else _q(card.tool_name)
    text = f":bell: {who}: {what} for agent *{L.escape(card.agent_id)}* is waiting for a decision."
    if card.expires_at:
        text += f" It expires {slack_date(card.expires_at)}."
    text += " Use the card in this thread."
    fallback = f"Reminder: {card.tool_name} for {card.agent_id} is waiting for a decision."
    return _msg(
        L.escape(fallback), [L.section(text, L.block_id(BlockId.REMINDER_PREFIX, card.request_id))]
    )
