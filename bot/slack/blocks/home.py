"""The App Home tab: requests waiting for this person, then their recent runs."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from bot.slack.blocks import limits as L
from bot.slack.blocks.cards import PENDING_TITLE, _q, actions_block, decision_buttons
from bot.slack.blocks.data import CardInfo, RunInfo
from bot.slack.blocks.fmt import compact_json, mention, one_line, slack_date, utc
from bot.slack.blocks.messages import USAGE, run_status_text
from bot.slack.ids import BlockId, CallbackId

MAX_RUNS = 20
COMPACT_ARGS = 300


def _newest_first(cards: Sequence[CardInfo]) -> list[CardInfo]:
    oldest = datetime.min.replace(tzinfo=UTC)
    cards = list({c.request_id: c for c in cards}.values())
    return sorted(cards, key=lambda c: utc(c.created_at) if c.created_at else oldest, reverse=True)


def _compact(card: CardInfo) -> tuple[str, bool]:
    """One card in a few lines; returns (mrkdwn, arguments were cut)."""
    emoji, title = PENDING_TITLE.get(card.kind, PENDING_TITLE["approval"])
    what = "" if card.kind == "review" else f": {_q(L.cut_text(card.tool_name, 100))}"
    parts = [f"{emoji} *{title}*{what} · agent *{L.escape(L.cut_text(card.agent_id, 100))}*"]
    if card.requester:
        parts.append(f"asked by {mention(card.requester)}")
    if card.expires_at:
        parts.append(f"expires {slack_date(card.expires_at)}")
    head = " · ".join(parts)
    if card.interrupted:
        head += (
            "\n:warning: The process stopped while this tool was running; it may have partly run."
        )
    raw = compact_json(card.arguments)
    code, cut = L.code_block(raw, COMPACT_ARGS + L.FENCE, "… (cut)")
    return f"{head}\n{code}", cut


def _card_blocks(card: CardInfo) -> list[dict[str, Any]]:
    text, cut = _compact(card)
    rid = card.request_id
    return [
        L.section(text, L.block_id(BlockId.HOME_CARD_PREFIX, rid)),
        actions_block(rid, decision_buttons(card, cut)),
    ]


def _link(run: RunInfo) -> str:
    url = run.permalink
    if url and url.startswith("https://") and not any(c in url for c in "|<> \n"):
        return f"<{url}|thread>"
    if run.channel_id and run.channel_id.isalnum():
        return f"in <#{run.channel_id}>"
    return ""


def _run_line(run: RunInfo) -> str:
    request = L.escape(L.cut_text(one_line(run.request_text) or "(no request text)", 120))
    line = f"{run_status_text(run.status)} · *{L.escape(L.cut_text(run.agent_id, 60))}* — {request}"
    if run.created_at:
        line += f" · {slack_date(run.created_at)}"
    link = _link(run)
    return f"{line} · {link}" if link else line


def _run_blocks(runs: Sequence[RunInfo]) -> list[dict[str, Any]]:
    if not runs:
        text = f"No runs yet. Start one in a channel with {USAGE}."
        return [L.section(text, BlockId.HOME_RUNS_EMPTY)]
    lines = [_run_line(r) for r in runs[:MAX_RUNS]]
    if len(runs) > MAX_RUNS:
        lines.append(f"… and {len(runs) - MAX_RUNS:,} more.")
    blocks: list[dict[str, Any]] = []
    current = ""
    for line in lines:
        if current and len(current) + 1 + len(line) > L.SECTION_TEXT:
            blocks.append(
                L.section(current, L.block_id(BlockId.HOME_RUNS_PREFIX, str(len(blocks))))
            )
            current = ""
        current = f"{current}\n{line}" if current else line
    blocks.append(L.section(current, L.block_id(BlockId.HOME_RUNS_PREFIX, str(len(blocks)))))
    return blocks


def home_view(
    pending: Sequence[CardInfo],
    total_pending: int,
    recent_runs: Sequence[RunInfo],
    *,
    user_id: str,
    total_is_lower_bound: bool = False,
) -> dict[str, Any]:
    """The home tab (type "home"): pending requests newest first, then recent runs.

    `total_is_lower_bound`: the store stopped counting at `total_pending` (there may be more)."""
    run_blocks = _run_blocks(recent_runs)
    top: list[dict[str, Any]] = [
        {
            "type": "header",
            "block_id": BlockId.HOME_WAITING_HEADER,
            "text": L.plain("Waiting for you", L.HEADER_TEXT),
        }
    ]
    # header + cards + "and N more" + divider + runs header + runs
    room = L.VIEW_BLOCKS - len(top) - 3 - len(run_blocks)
    cards = _newest_first(pending)[: max(0, room // 2)]
    total = max(total_pending, len(pending))
    blocks = list(top)
    if not pending and total == 0:
        text = f"Nothing is waiting for {mention(user_id)}. :tada:"
        blocks.append(L.section(text, BlockId.HOME_WAITING_EMPTY))
    for card in cards:
        blocks.extend(_card_blocks(card))
    if total > len(cards):
        plus = "+" if total_is_lower_bound else ""
        more = f"… and {total - len(cards):,}{plus} more waiting (see the run threads)."
        blocks.append(L.context([more], BlockId.HOME_WAITING_MORE))
    blocks.append({"type": "divider", "block_id": BlockId.HOME_DIVIDER})
    blocks.append(
        {
            "type": "header",
            "block_id": BlockId.HOME_RUNS_HEADER,
            "text": L.plain("Your recent runs", L.HEADER_TEXT),
        }
    )
    blocks.extend(run_blocks)
    return {"type": "home", "callback_id": CallbackId.HOME, "blocks": blocks}
