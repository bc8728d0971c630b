"""Standing approvals in the thread: the standing approval's line (with Revoke) and the calls
approved under it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.slack.blocks import limits as L
from bot.slack.blocks.data import CardInfo
from bot.slack.blocks.fmt import mention, slack_date
from bot.slack.ids import ActionId, BlockId


def span(seconds: int) -> str:
    """`1 h`, `30 min`, `2 d`, `90 s`: a standing approval's length, as people say it."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def _code(text: str) -> str:
    return "`" + L.escape(text.replace("`", "ˋ")) + "`"


def approve_always_button(card: CardInfo) -> dict[str, Any] | None:
    """ "Approve, and allow `tool` in this thread for 1 h", with a confirm stating the scope;
    None when the request offers no standing approval."""
    if not card.standing_seconds or card.min_approvals > 1 or card.require_reason:
        return None
    lasts = span(card.standing_seconds)
    label = L.cut_text(f"Approve, and allow {card.tool_name} in this thread for {lasts}", 75)
    confirm = L.confirm_dialog(
        "Allow in this thread?",
        f"This approves this call, and lets later calls of {_code(card.tool_name)} in this "
        f"thread run without asking anyone, for {lasts} (until someone revokes it).",
        "Approve and allow",
    )
    return L.button(label, ActionId.APPROVE_ALWAYS, card.request_id, confirm=confirm)


def standing_message(
    approval_id: str,
    tool_name: str,
    granted_by: str,
    expires_at: datetime,
    revoked_by: str | None = None,
) -> dict[str, Any]:
    """The standing approval, one context line, and a Revoke button while it stands."""
    if revoked_by:
        text = (
            f":no_entry_sign: Standing approval for {_code(tool_name)} in this thread, given by "
            f"{mention(granted_by)}, was revoked by {mention(revoked_by)}."
        )
    else:
        text = (
            f":white_check_mark: {mention(granted_by)} allowed {_code(tool_name)} in this thread "
            f"until {slack_date(expires_at)}: its calls here run without asking."
        )
    blocks = [L.context([text], L.block_id(BlockId.GRANT_PREFIX, approval_id))]
    if not revoked_by:
        blocks.append(
            {
                "type": "actions",
                "block_id": L.block_id(BlockId.GRANT_ACTIONS_PREFIX, approval_id),
                "elements": [L.button("Revoke", ActionId.REVOKE, approval_id, style="danger")],
            }
        )
    fallback = f"Standing approval for {tool_name} in this thread"
    return {"text": L.escape(fallback + (" (revoked)" if revoked_by else "")), "blocks": blocks}


def auto_approved(tool_name: str, granted_by: str, expires_at: datetime) -> dict[str, Any]:
    """One line per call run under a standing approval."""
    text = (
        f":fast_forward: {_code(tool_name)} auto-approved under the standing approval "
        f"{mention(granted_by)} gave in this thread (until {slack_date(expires_at)})."
    )
    fallback = f"{tool_name} auto-approved under a standing approval"
    return {"text": L.escape(fallback), "blocks": [L.context([text], BlockId.AUTO_APPROVED)]}
