"""Issue 21, finding 7: the operator, not the caller, sets an API request's approval policy.

A key carries its own policy (approvers, quorum, self-approval, expiry); the policy file's
`api:` section matches requests by key name, tool and arguments; a caller may narrow what
they give, never widen it (422 naming the field). A key without channels posts only in
SAYSO_DEFAULT_CHANNEL: never anywhere, never a DM.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from bot.service.api_requests import new_key_secrets
from store import api as api_ops
from tests.e2e.api_flows import create, make_key
from tests.e2e.harness import Harness
from tests.e2e.test_approval_api_bad_input import error_of
from tests.e2e.test_approval_api_cli import sayso


async def _key(h: Harness, name: str = "ci", **policy: object) -> str:
    assert h.bot is not None
    token, secret = new_key_secrets()
    created = await api_ops.create_key(
        h.bot.store.db,
        name,
        token,
        secret,
        ["C_GENERAL"],
        **policy,  # type: ignore[arg-type]
    )
    assert created
    return token


async def _stored(h: Harness, request_id: str):  # type: ignore[no-untyped-def]
    assert h.bot is not None
    request = await h.bot.store.requests.get(request_id)
    assert request is not None
    return request


async def test_a_caller_may_narrow_the_keys_approvers_never_widen_them(harness: Harness) -> None:
    h = harness
    token = await _key(h, approvers=["U_APPROVER", "S_SRE"])
    r = await create(h, token, tool="deploy", approvers=["U_REQUESTER"])
    assert r.status_code == 422, r.text
    assert "approvers" in error_of(r)["message"] and "U_REQUESTER" in error_of(r)["message"]
    r = await create(h, token, tool="deploy", approvers=["U_APPROVER", "U_MEMBER"])
    assert r.status_code == 422 and "U_MEMBER" in error_of(r)["message"]
    r = await create(h, token, tool="deploy")  # none named: the key's
    assert r.status_code == 201, r.text
    assert sorted((await _stored(h, r.json()["id"])).policy.approvers) == ["S_SRE", "U_APPROVER"]
    r = await create(h, token, tool="deploy", approvers=["U_APPROVER"])  # a subset
    assert r.status_code == 201, r.text
    assert list((await _stored(h, r.json()["id"])).policy.approvers) == ["U_APPROVER"]


async def test_quorum_self_approval_and_expiry_only_tighten(harness: Harness) -> None:
    h = harness
    token = await _key(h, min_approvals=2, allow_self_approval=False, expires_in=600)
    for body, field in [
        ({"min_approvals": 1}, "min_approvals"),
        ({"allow_self_approval": True}, "allow_self_approval"),
        ({"expires_in": 3600}, "expires_in"),
    ]:
        r = await create(h, token, tool="deploy", **body)
        assert r.status_code == 422, (body, r.text)
        assert error_of(r)["message"].startswith(field), r.text
    before = time.time()
    r = await create(h, token, tool="deploy", requested_by="U_REQUESTER")
    assert r.status_code == 201, r.text
    request = await _stored(h, r.json()["id"])
    assert request.policy.min_approvals == 2 and request.policy.allow_self_approval is False
    assert 590 <= request.policy.expires_at.timestamp() - before <= 610
    r = await create(h, token, tool="deploy", min_approvals=3, expires_in=60)  # tighter: fine
    assert r.status_code == 201, r.text
    request = await _stored(h, r.json()["id"])
    assert request.policy.min_approvals == 3
    assert request.policy.expires_at.timestamp() - before <= 70


async def test_requested_by_never_approves_and_the_key_can_forbid_it(harness: Harness) -> None:
    h = harness
    token = await _key(h, approvers=["U_APPROVER", "U_REQUESTER"], allow_self_approval=False)
    r = await create(h, token, tool="deploy", requested_by="U_REQUESTER")
    assert r.status_code == 201, r.text
    message_ts = r.json()["message_ts"]
    await h.sandbox.click("U_REQUESTER", "C_GENERAL", message_ts, "approve")
    await h.idle()
    assert (await _stored(h, r.json()["id"])).state.status == "pending"  # the requester may not
    await h.sandbox.click("U_APPROVER", "C_GENERAL", message_ts, "approve")
    for _ in range(100):
        if (await _stored(h, r.json()["id"])).state.status == "approved":
            break
        await asyncio.sleep(0.05)
    assert (await _stored(h, r.json()["id"])).state.status == "approved"


async def test_a_key_without_channels_posts_only_in_the_default_channel(harness: Harness) -> None:
    h = harness
    token, _ = await make_key(h, "nowhere", channels=[])
    for channel in ("C_GENERAL", "D_REQUESTER"):  # SAYSO_DEFAULT_CHANNEL is not set
        r = await create(h, token, tool="deploy", channel=channel)
        assert r.status_code == 403 and "no channels" in error_of(r)["message"], r.text
    await h.stop_bot()
    h.settings_overrides = {"sayso_default_channel": "C_GENERAL"}
    await h.start_bot()
    for channel in ("C_OPS", "D_REQUESTER"):
        r = await create(h, token, tool="deploy", channel=channel)
        assert r.status_code == 403 and channel in error_of(r)["message"], r.text
    r = await create(h, token, tool="deploy", channel=None)
    assert r.status_code == 201 and r.json()["channel"] == "C_GENERAL", r.text


POLICY = """
api:
  keys:
    ci:
      tools:
        deploy:
          approvers: [U_APPROVER, U_MEMBER]
          rules:
            - name: production
              when:
                environment: {one_of: [production, prod]}
              min_approvals: 2
              require_reason: true
              allow_self_approval: false
    "*":
      tools:
        "*":
          expires_in: 5m
"""


async def test_the_policy_file_matches_api_requests_by_key_tool_and_arguments(
    harness: Harness, tmp_path: Path
) -> None:
    h = harness
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY)
    await h.stop_bot()
    h.settings_overrides = {"sayso_policy": str(path)}
    await h.start_bot()
    token = await _key(h, approvers=["U_APPROVER"])  # the file's entry overrides the key's
    before = time.time()
    r = await create(h, token, tool="deploy", arguments={"environment": "production"})
    assert r.status_code == 201, r.text
    request = await _stored(h, r.json()["id"])
    assert request.policy.rule == "production" and request.policy.min_approvals == 2
    assert request.policy.require_reason and not request.policy.allow_self_approval
    assert sorted(request.policy.approvers) == ["U_APPROVER", "U_MEMBER"]
    r = await create(h, token, tool="deploy", arguments={"environment": "staging"})
    request = await _stored(h, r.json()["id"])
    assert request.policy.rule is None and request.policy.min_approvals == 1
    r = await create(h, token, tool="deploy", min_approvals=1, arguments={"environment": "prod"})
    assert r.status_code == 422 and "min_approvals" in error_of(r)["message"]
    other = await _key(h, "other")  # any key, any tool: the five minutes
    r = await create(h, other, tool="restart")
    request = await _stored(h, r.json()["id"])
    assert request.policy.rule is None and request.policy.expires_at.timestamp() - before <= 310
    r = await create(h, other, tool="restart", expires_in=3600)
    assert r.status_code == 422 and "expires_in" in error_of(r)["message"]


async def test_sayso_keys_create_takes_the_keys_policy(tmp_path: Path) -> None:
    db = {"DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'keys.db'}"}
    args = ["--channels", "C1,C2", "--approvers", "U1,S2", "--min-approvals", "2"]
    code, _, err = await sayso(
        tmp_path, "keys", "create", "ci", *args, "--no-self-approval", "--expires-in", "24h", **db
    )
    assert code == 0, err
    code, out, _ = await sayso(tmp_path, "keys", "list", **db)
    assert code == 0
    assert "ci\tlive\tC1,C2\tapprovers U1,S2, min 2, no self-approval, expires in 86400s" in out
    for bad, field in [
        (["--approvers", "bob"], "--approvers"),
        (["--channels", "general"], "--channels"),
        (["--approvers", "U1", "--min-approvals", "2"], "--min-approvals"),
        (["--expires-in", "soon"], "--expires-in"),
    ]:
        code, _, err = await sayso(tmp_path, "keys", "create", "bad", *bad, **db)
        assert code == 2 and field in err, (bad, err)
    code, out, err = await sayso(tmp_path, "keys", "create", "plain", **db)
    assert code == 0 and "SAYSO_DEFAULT_CHANNEL" in out, err
