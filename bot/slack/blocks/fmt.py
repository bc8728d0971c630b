"""Small formatting helpers shared by the builders (mentions, dates, JSON, statuses)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from bot.slack.blocks.limits import escape

_USER = re.compile(r"^[UW][A-Z0-9_]{1,30}$")
_GROUP = re.compile(r"^S[A-Z0-9_]{1,30}$")

RUN_STATUS = {
    "running": (":hourglass_flowing_sand:", "Running"),
    "waiting_for_human": (":raised_hand:", "Waiting for a person"),
    "completed": (":white_check_mark:", "Completed"),
    "failed": (":x:", "Failed"),
    "cancelled": (":no_entry_sign:", "Cancelled"),
}

KIND_LABEL = {
    "auto": "runs by itself",
    "approval": "needs approval",
    "manual": "done by a person",
    "hitl": "asks a person",
}


def utc(dt: datetime) -> datetime:
    """Naive datetimes are taken as UTC."""
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def slack_date(dt: datetime) -> str:
    """Slack date formatting, shown in each reader's time zone, with a UTC fallback."""
    d = utc(dt)
    fallback = d.strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(d.timestamp())}^{{date_short_pretty}} {{time}}|{fallback}>"


def mention(user_id: str | None) -> str:
    """`<@U…>` for a user id, `<!subteam^S…>` for a group id, escaped text otherwise."""
    if not user_id:
        return "someone"
    if _USER.match(user_id):
        return f"<@{user_id}>"
    if _GROUP.match(user_id):
        return f"<!subteam^{user_id}>"
    return escape(user_id)


def mention_list(ids: Iterable[str], limit: int = 1500) -> str:
    """Mentions joined with commas, ending with "and N more" once `limit` is reached."""
    ids = list(ids)
    out: list[str] = []
    size = 0
    for i, uid in enumerate(ids):
        m = mention(uid)
        if size + len(m) + 2 > limit:
            return ", ".join(out) + f" and {len(ids) - i:,} more"
        out.append(m)
        size += len(m) + 2
    return ", ".join(out)


def who_may_decide(approvers: tuple[str, ...]) -> str:
    """Who may decide, as mrkdwn."""
    return mention_list(approvers) if approvers else "any full member of the workspace"


def pretty_json(value: Any) -> str:
    """Indented JSON; anything not JSON-native is shown with str()."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def compact_json(value: Any) -> str:
    """One-line JSON for diffs and compact cards."""
    return json.dumps(value, ensure_ascii=False, default=str)


def one_line(text: str) -> str:
    """Collapse whitespace so text fits on one line."""
    return " ".join(text.split())
