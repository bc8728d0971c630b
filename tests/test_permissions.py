"""Who may decide: listed people and groups, full members, never guests or other workspaces."""

from __future__ import annotations

import pytest

from bot.service.permissions import may_decide
from bot.service.ports import Person


class Directory:
    """Slack's users.info and usergroups.users.list, as data."""

    def __init__(self) -> None:
        self.people = {
            "U_MEMBER": Person("U_MEMBER", "T1"),
            "U_GUEST": Person("U_GUEST", "T1", is_guest=True),
            "U_EXT": Person("U_EXT", "T2"),
            "U_BOT": Person("U_BOT", "T1", is_bot=True),
            "U_OPS": Person("U_OPS", "T1"),
        }
        self.groups = {"S_OPS": frozenset({"U_OPS"})}

    async def person(self, user_id: str) -> Person | None:
        return self.people.get(user_id)

    async def group_members(self, group_id: str) -> frozenset[str]:
        return self.groups.get(group_id, frozenset())

    async def channel_members(self, channel_id: str) -> frozenset[str]:
        return frozenset({"U_MEMBER", "U_OPS"}) if channel_id == "C_PRIVATE" else frozenset()


async def verdict(user: str, approvers=(), *, team="T1", requester=None, self_ok=True) -> bool:  # type: ignore[no-untyped-def]
    v = await may_decide(
        Directory(),
        user_id=user,
        team_id=team,
        workspace_team_id="T1",
        approvers=approvers,
        requester=requester,
        allow_self_approval=self_ok,
    )
    return v.allowed


@pytest.mark.parametrize(
    ("user", "approvers", "allowed"),
    [
        ("U_MEMBER", (), True),
        ("U_GUEST", (), False),
        ("U_EXT", (), False),
        ("U_BOT", (), False),
        ("U_UNKNOWN", (), False),
        ("U_OPS", ("S_OPS",), True),
        ("U_MEMBER", ("S_OPS",), False),
        ("U_GUEST", ("U_GUEST",), True),  # listed by id
        ("U_EXT", ("U_EXT",), True),
        ("U_GUEST", ("S_OPS",), False),
    ],
)
async def test_rules(user: str, approvers: tuple, allowed: bool) -> None:
    assert await verdict(user, approvers) is allowed


async def test_a_payload_claiming_the_home_team_does_not_make_an_outsider_a_member() -> None:
    assert await verdict("U_EXT", team="T1") is False


async def test_self_approval_can_be_forbidden() -> None:
    assert await verdict("U_OPS", ("S_OPS",), requester="U_OPS", self_ok=False) is False
    assert await verdict("U_OPS", ("S_OPS",), requester="U_OPS", self_ok=True) is True


async def test_open_requests_are_for_members_of_their_channel() -> None:
    async def allowed(user: str, channel: str) -> bool:
        v = await may_decide(
            Directory(),
            user_id=user,
            team_id="T1",
            workspace_team_id="T1",
            approvers=(),
            requester=None,
            allow_self_approval=True,
            channel_id=channel,
        )
        return v.allowed

    assert await allowed("U_MEMBER", "C_PRIVATE")
    assert not await allowed("U_MEMBER", "C_OTHER")  # unknown members: nobody
