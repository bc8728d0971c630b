"""While the workspace is unknown (auth.test has not answered), only people listed by id may
decide: no run's team id stands in for the workspace's."""

from __future__ import annotations

from bot.service.permissions import STARTING, may_decide
from tests.test_permissions import Directory


async def test_nobody_unlisted_decides_while_the_workspace_is_unknown() -> None:
    for user, team in (("U_MEMBER", "T1"), ("U_EXT", "T2")):
        verdict = await may_decide(
            Directory(),
            user_id=user,
            team_id=team,
            workspace_team_id=None,
            approvers=(),
            requester=None,
            allow_self_approval=True,
        )
        assert not verdict.allowed and verdict.reason == STARTING


async def test_people_listed_by_id_still_decide() -> None:
    verdict = await may_decide(
        Directory(),
        user_id="U_OPS",
        team_id="T1",
        workspace_team_id=None,
        approvers=("U_OPS",),
        requester=None,
        allow_self_approval=True,
    )
    assert verdict.allowed
