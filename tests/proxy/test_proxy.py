"""`sayso proxy` in front of the reference `mcp-server-git`, driven by the `mcp` SDK's client,
over a live sayso whose cards are decided by signed clicks on the sandbox."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from bot.proxy.approvals import RECEIPT_META
from bot.receipts import verify_receipt
from tests.e2e.harness import message_text
from tests.helpers.views import filled_views
from tests.proxy.conftest import Live
from tests.proxy.flows import (
    commits,
    make_repo,
    one_card,
    open_cards,
    proxied_git,
    proxy_pids,
    stage,
    text_of,
)

pytestmark = pytest.mark.slow


async def test_tools_are_mirrored_and_a_read_only_tool_passes_without_a_card(
    live: Live, tmp_path: Path
) -> None:
    h, repo = live.h, make_repo(tmp_path / "repo")
    async with proxied_git(h, live.key, repo) as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert {"git_status", "git_commit", "git_log", "git_add"} <= set(listed)
        commit = listed["git_commit"]
        assert commit.annotations is not None and commit.annotations.read_only_hint is False
        assert set(commit.input_schema["properties"]) == {"repo_path", "message"}
        assert listed["git_status"].description == "Shows the working tree status"
        result = await session.call_tool("git_status", {"repo_path": str(repo)})
        assert not result.is_error and "On branch main" in text_of(result)
        result = await session.call_tool("git_log", {"repo_path": str(repo)})
        assert "init" in text_of(result)
    assert h.sandbox.messages("C_GENERAL") == []  # no card for read-only tools


async def test_approve_forwards_the_commit_once_with_a_receipt(live: Live, tmp_path: Path) -> None:
    h, repo = live.h, make_repo(tmp_path / "repo")
    stage(repo)
    arguments = {"repo_path": str(repo), "message": "Add a.txt"}
    async with proxied_git(h, live.key, repo) as session:
        call = asyncio.create_task(session.call_tool("git_commit", arguments))
        card = await one_card(h)
        text = message_text(card)
        assert "git_commit" in text and "Add a.txt" in text and "server: git" in text
        assert commits(repo) == ["init"]  # nothing runs before the click
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
        result = await asyncio.wait_for(call, 30)
    assert not result.is_error, text_of(result)
    assert "Changes committed successfully" in text_of(result)
    assert commits(repo) == ["Add a.txt", "init"]
    receipt = (result.meta or {})[RECEIPT_META]
    verify_receipt(receipt, "git_commit", arguments, live.signer.public_key)
    assert receipt["decision"] == "approve" and receipt["decided_by"] == "U_APPROVER"


async def test_edit_commits_the_edited_message(live: Live, tmp_path: Path) -> None:
    h, repo = live.h, make_repo(tmp_path / "repo")
    stage(repo)
    async with proxied_git(h, live.key, repo) as session:
        call = asyncio.create_task(
            session.call_tool("git_commit", {"repo_path": str(repo), "message": "wip"})
        )
        card = await one_card(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "edit")
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        fields = {"repo_path": str(repo), "message": "Add a.txt (reviewed)"}
        await h.sandbox.submit_view("U_APPROVER", view["id"], fields)
        result = await asyncio.wait_for(call, 30)
    assert not result.is_error, text_of(result)
    assert commits(repo) == ["Add a.txt (reviewed)", "init"]
    receipt = (result.meta or {})[RECEIPT_META]
    assert receipt["decision"] == "edit"
    verify_receipt(receipt, "git_commit", fields, live.signer.public_key)


async def test_reject_answers_is_error_with_the_reason_and_no_commit(
    live: Live, tmp_path: Path
) -> None:
    h, repo = live.h, make_repo(tmp_path / "repo")
    stage(repo)
    async with proxied_git(h, live.key, repo) as session:
        call = asyncio.create_task(
            session.call_tool("git_commit", {"repo_path": str(repo), "message": "yolo"})
        )
        card = await one_card(h)
        await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "reject")
        view = (await h.sandbox.wait_for(lambda sb: filled_views(sb, "U_APPROVER")))[-1]
        await h.sandbox.submit_view("U_APPROVER", view["id"], {"reason": "Squash it first"})
        result = await asyncio.wait_for(call, 30)
    assert result.is_error
    assert "rejected" in text_of(result) and "Squash it first" in text_of(result)
    assert commits(repo) == ["init"]


async def test_policy_allows_and_denies_by_name_and_glob(live: Live, tmp_path: Path) -> None:
    h, repo = live.h, make_repo(tmp_path / "repo")
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "proxy:\n  git:\n    tools:\n"
        '      git_add: {action: allow}\n      "git_*branch*": {action: deny}\n'
    )
    (repo / "b.txt").write_text("b\n")
    async with proxied_git(h, live.key, repo, policy=policy) as session:
        added = await session.call_tool("git_add", {"repo_path": str(repo), "files": ["b.txt"]})
        assert not added.is_error, text_of(added)
        denied = await session.call_tool(
            "git_create_branch", {"repo_path": str(repo), "branch_name": "x"}
        )
        assert denied.is_error and "not allowed" in text_of(denied)
    assert h.sandbox.messages("C_GENERAL") == []


async def test_a_proxy_killed_while_waiting_and_restarted_forwards_once(
    live: Live, tmp_path: Path
) -> None:
    h, repo = live.h, make_repo(tmp_path / "repo")
    stage(repo)
    arguments = {"repo_path": str(repo), "message": "Add a.txt"}
    with pytest.raises(BaseException):  # noqa: B017 - the client sees its server die
        async with proxied_git(h, live.key, repo) as session:
            call = asyncio.create_task(session.call_tool("git_commit", arguments))
            card = await one_card(h)
            (pid,) = proxy_pids()
            os.kill(pid, signal.SIGKILL)
            await asyncio.wait_for(call, 30)
    # approved while no proxy runs; the agent's client starts the proxy again and retries
    await h.sandbox.click("U_APPROVER", "C_GENERAL", card["ts"], "approve")
    async with proxied_git(h, live.key, repo) as session:
        result = await asyncio.wait_for(session.call_tool("git_commit", arguments), 30)
    assert not result.is_error, text_of(result)
    assert commits(repo) == ["Add a.txt", "init"]
    await h.idle()  # the card's update goes through the outbox
    assert len(h.sandbox.messages("C_GENERAL")) == 1  # the same request: no second card
    assert open_cards(h) == []
