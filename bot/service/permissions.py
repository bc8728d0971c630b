"""Who may decide an approval request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.service.ports import Directory
from bot.service.text import people

LOOKUP_FAILED = "I could not look your account up in Slack; try again in a moment."
STARTING = "sayso is starting, try again in a moment."
"""The answer while this workspace is not known yet (Slack's auth.test has not answered)."""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str = ""


def describe(approvers: Sequence[str]) -> str:
    if not approvers:
        return "any full member of this workspace"
    return people(approvers)


async def may_decide(
    directory: Directory,
    *,
    user_id: str,
    team_id: str | None,
    workspace_team_id: str | None,
    approvers: Sequence[str],
    requester: str | None,
    allow_self_approval: bool,
    channel_id: str | None = None,
) -> Verdict:
    """Apply the rules: listed people and groups; else any full member who is in the
    request's channel (`channel_id`, when known); never guests, people from another
    workspace or bots unless listed by id; self-approval when allowed.

    `workspace_team_id` is this workspace's (from Slack's auth.test), never a run's: while it
    is unknown only people listed by id may decide."""
    who = describe(approvers)
    if not allow_self_approval and requester and user_id == requester:
        return Verdict(False, f"You started this run, and this tool needs someone else: {who}.")
    if user_id in approvers:
        return Verdict(True)
    if not workspace_team_id:
        return Verdict(False, STARTING)
    person = await directory.person(user_id)
    if person is None:
        return Verdict(False, LOOKUP_FAILED)
    if person.deleted or person.is_bot:
        return Verdict(False, f"Only {who} may decide this request.")
    teams = {t for t in (team_id, person.team_id) if t}
    external = any(t != workspace_team_id for t in teams)
    if external or person.is_guest:
        return Verdict(False, f"Guests and people from other workspaces may not decide; ask {who}.")
    if not approvers:
        if channel_id and not await in_channel(directory, user_id, channel_id):
            return Verdict(False, "Only members of the channel where this run started may decide.")
        return Verdict(True)
    for group in (a for a in approvers if a.startswith("S")):
        if user_id in await directory.group_members(group):
            return Verdict(True)
    return Verdict(False, f"Only {who} may decide this request.")


async def may_decide_open_requests(
    directory: Directory, *, user_id: str, workspace_team_id: str | None
) -> bool:
    """May this person decide requests that name no approver (open to any full member)?

    The same rule as `may_decide` with no approvers listed, for a request the person did
    not start (the inbox leaves their own out when self-approval is off)."""
    verdict = await may_decide(
        directory,
        user_id=user_id,
        team_id=None,
        workspace_team_id=workspace_team_id,
        approvers=(),
        requester=None,
        allow_self_approval=True,
    )
    return verdict.allowed


async def in_channel(directory: Directory, user_id: str, channel_id: str) -> bool:
    """Is the person a member of the channel? (A request open to anyone is seen and decided
    only by the members of its channel: a private channel's requests stay in it.)"""
    return user_id in await directory.channel_members(channel_id)


async def open_request_channels(
    directory: Directory, user_id: str, channel_ids: Sequence[str]
) -> list[str]:
    """Of these channels, those whose requests open to anyone this person may see."""
    return [c for c in channel_ids if await in_channel(directory, user_id, c)]


async def is_admin(directory: Directory, user_id: str, admins: Sequence[str]) -> bool:
    """Listed in `SAYSO_ADMINS`, by id or through one of its user groups."""
    if user_id in admins:
        return True
    for group in (a for a in admins if a.startswith("S")):
        if user_id in await directory.group_members(group):
            return True
    return False


async def may_control_run(
    directory: Directory,
    *,
    user_id: str,
    team_id: str | None,
    workspace_team_id: str | None,
    requester: str | None,
    admins: Sequence[str],
    approvals: Sequence[tuple[Sequence[str], str | None]],
) -> bool:
    """May this person cancel or retry a run? Its requester, an admin, or whoever may decide
    one of `approvals` (the approvers and channel of its open requests, or of the failed
    call)."""
    if requester and user_id == requester:
        return True
    if await is_admin(directory, user_id, admins):
        return True
    for approvers, channel_id in approvals:
        verdict = await may_decide(
            directory,
            user_id=user_id,
            team_id=team_id,
            workspace_team_id=workspace_team_id,
            approvers=approvers,
            requester=requester,
            allow_self_approval=True,
            channel_id=channel_id,
        )
        if verdict.allowed:
            return True
    return False
