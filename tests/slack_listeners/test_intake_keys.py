"""Which Slack payloads the durable intake records, under which key, and its group commit."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.slack.intake import intake_key
from bot.slack.intake_batch import GroupCommit


def click(action_id: str, trigger: str = "T.1") -> dict[str, Any]:
    return {"type": "block_actions", "trigger_id": trigger, "actions": [{"action_id": action_id}]}


def event(**fields: Any) -> dict[str, Any]:
    return {"type": "event_callback", "event_id": "Ev1", "event": fields}


def test_state_changing_clicks_are_recorded_one_row_per_click() -> None:
    assert intake_key(click("approve")) == ("action:T.1", "action")
    assert intake_key(click("approve", "T.2")) == ("action:T.2", "action")  # a second click
    for action_id in ("approve_always", "retry", "cancel", "revoke"):
        assert intake_key(click(action_id)) is not None


def test_clicks_that_only_open_a_modal_are_not_recorded() -> None:
    for action_id in ("edit", "reject", "answer", "review", "view_args"):
        assert intake_key(click(action_id)) is None


def test_form_submissions_commands_mentions_and_thread_replies_are_recorded() -> None:
    submission = {"type": "view_submission", "trigger_id": "T.3", "view": {}}
    assert intake_key({**submission, "view": {"callback_id": "sayso_reject"}}) == (
        "view:T.3",
        "view",
    )
    assert intake_key({**submission, "view": {"callback_id": "sayso_view_args"}}) is None
    command = {"command": "/sayso", "trigger_id": "T.4", "text": "ops deploy"}
    assert intake_key(command) == ("command:T.4", "command")
    assert intake_key(event(type="app_mention", text="hi")) == ("mention:Ev1", "mention")
    reply = event(type="message", thread_ts="1.0", text="yes")
    assert intake_key(reply) == ("reply:Ev1", "reply")


def test_other_messages_are_not_recorded() -> None:
    assert intake_key(event(type="message", text="top level")) is None
    assert intake_key(event(type="message", thread_ts="1.0", bot_id="B1")) is None
    assert intake_key(event(type="message", thread_ts="1.0", subtype="message_changed")) is None
    assert intake_key(event(type="app_home_opened")) is None


async def test_what_arrives_during_a_transaction_shares_the_next_one() -> None:
    batches: list[list[int]] = []

    async def flush(items: list[int]) -> list[int]:
        batches.append(items)
        await asyncio.sleep(0.05)
        return [i * 10 for i in items]

    commit: GroupCommit[int, int] = GroupCommit(flush)
    first = asyncio.create_task(commit.submit(1))
    await asyncio.sleep(0.01)  # the first transaction is in flight
    rest = await asyncio.gather(*(commit.submit(i) for i in (2, 3, 4)))
    assert (await first, rest) == (10, [20, 30, 40])
    assert batches == [[1], [2, 3, 4]]


async def test_a_failed_transaction_fails_its_batch_only() -> None:
    async def flush(items: list[int]) -> list[int]:
        if 0 in items:
            raise OSError("database away")
        return items

    commit: GroupCommit[int, int] = GroupCommit(flush)
    try:
        await commit.submit(0)
    except OSError:
        pass
    else:
        raise AssertionError("the failure must reach the submitter")
    assert await commit.submit(5) == 5


async def test_lingering_items_a_moment_apart_share_one_write() -> None:
    """The closings: nobody waits for them, so those of clicks a moment apart share a write."""
    batches: list[list[int]] = []

    async def flush(items: list[int]) -> list[int]:
        batches.append(items)
        return items

    commit: GroupCommit[int, int] = GroupCommit(flush, linger=0.3)
    tasks = []
    for i in range(4):
        tasks.append(asyncio.create_task(commit.submit(i)))
        await asyncio.sleep(0.05)
    assert batches == []  # still lingering
    assert await asyncio.gather(*tasks) == [0, 1, 2, 3]
    assert batches == [[0, 1, 2, 3]]


async def test_settle_writes_what_lingers_at_once() -> None:
    batches: list[list[int]] = []

    async def flush(items: list[int]) -> list[int]:
        batches.append(items)
        return items

    commit: GroupCommit[int, int] = GroupCommit(flush, linger=30.0)
    waiting = asyncio.create_task(commit.submit(7))
    await asyncio.sleep(0.01)
    await asyncio.wait_for(commit.settle(), 2)
    assert batches == [[7]] and await waiting == 7
    assert await asyncio.wait_for(commit.submit(8), 2) == 8  # no lingering after it
