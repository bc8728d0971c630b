"""The sandbox web page in Debian's Chromium, driven by Playwright, with the tiny bot behind it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.sandbox import SlackSandbox
from tests.helpers.browser import ARTIFACTS, chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
async def page() -> AsyncIterator[object]:
    async with chromium() as browser:
        yield await browser.new_page(viewport={"width": 1280, "height": 800})


async def test_page_renders_blocks_and_delivers_clicks(
    sandbox: SlackSandbox, tiny_bot, client, kit, page
) -> None:
    root = await client.chat_postMessage(channel="C_GENERAL", text="ops: deploy v2 to staging")
    card = await client.chat_postMessage(
        channel="C_GENERAL",
        thread_ts=root["ts"],
        text="Approval needed",
        blocks=[
            *kit.card_blocks(),
            {"type": "actions", "elements": [kit.button("edit", "Edit", "call-1")]},
        ],
    )
    await client.chat_postEphemeral(channel="C_GENERAL", user="U_APPROVER", text="psst, *you*")

    async def reply(received):
        if (
            received.kind == "block_actions"
            and received.payload["actions"][0]["action_id"] == "edit"
        ):
            await client.views_open(trigger_id=received.payload["trigger_id"], view=kit.modal())
        if received.kind == "view_submission":
            reason = received.payload["view"]["state"]["values"]["reason"]["text"]["value"]
            if len(reason) < 10:
                return 200, {"response_action": "errors", "errors": {"reason": "Say more"}}
            await client.chat_postMessage(
                channel="C_GENERAL", thread_ts=root["ts"], text=f"Edited: {reason}"
            )
        return 200, None

    tiny_bot.reply = reply
    await page.goto(f"{sandbox.url}/?user=U_APPROVER")
    message = page.locator(f'[data-testid="message"][data-ts="{root["ts"]}"]')
    await message.wait_for()
    assert "ops: deploy v2 to staging" in await message.inner_text()
    await page.locator('[data-testid="ephemeral"]').wait_for()
    assert "Only visible to you" in await page.locator('[data-testid="ephemeral"]').inner_text()

    await page.click(f'[data-testid="replies"][data-ts="{root["ts"]}"]')
    panel = page.locator('[data-testid="thread-panel"]')
    approve = panel.locator('[data-testid="button"][data-action-id="approve"]')
    await approve.wait_for()
    assert "Approval needed" in await panel.inner_text()
    assert "kubectl apply" in await panel.locator("code").first.inner_text()
    await page.screenshot(path=str(ARTIFACTS / "sandbox-thread.png"))

    await approve.click()
    await sandbox.wait_for(lambda sb: tiny_bot.of_kind("block_actions"))
    payload = tiny_bot.of_kind("block_actions")[0].payload
    assert payload["user"]["id"] == "U_APPROVER"
    assert payload["actions"][0]["action_id"] == "approve"
    assert payload["container"]["message_ts"] == card["ts"]

    # A modal opened by the bot, a field error from response_action errors, then success.
    await panel.locator('[data-testid="button"][data-action-id="edit"]').click()
    modal = page.locator('[data-testid="modal"]')
    await modal.locator('[data-testid="input"][data-block-id="reason"]').fill("short")
    await modal.locator('[data-testid="modal-submit"]').click()
    error = modal.locator('[data-testid="input-error"][data-block-id="reason"]')
    await error.wait_for()
    assert await error.inner_text() == "Say more"
    await page.screenshot(path=str(ARTIFACTS / "sandbox-modal-error.png"))
    await modal.locator('[data-testid="input"][data-block-id="reason"]').fill(
        "staging only, please"
    )
    await modal.locator('[data-testid="modal-submit"]').click()
    await modal.wait_for(state="hidden")
    await panel.get_by_text("Edited: staging only, please").wait_for()

    # The composer sends slash commands and messages as the person chosen in "Acting as".
    await page.select_option('[data-testid="actas"]', "U_REQUESTER")
    await page.locator('[data-testid="ephemeral"]').wait_for(state="detached")
    await page.fill('[data-testid="composer"]', "/sayso ops status")
    await page.click('[data-testid="send"]')
    await page.fill('[data-testid="composer"]', "hello @sayso")
    await page.press('[data-testid="composer"]', "Enter")
    await sandbox.wait_for(lambda sb: tiny_bot.of_kind("app_mention"))
    command = tiny_bot.of_kind("slash_command")[0].form
    assert (command["user_id"], command["text"]) == ("U_REQUESTER", "ops status")
    assert tiny_bot.of_kind("app_mention")[0].event["event"]["text"] == "hello <@U_SAYSO>"
    await page.screenshot(path=str(ARTIFACTS / "sandbox-channel.png"))


async def test_page_home_tab(sandbox: SlackSandbox, tiny_bot, client, kit, page) -> None:
    async def reply(received):
        if received.kind == "app_home_opened":
            user = received.event["event"]["user"]
            await client.views_publish(
                user_id=user, view={"type": "home", "blocks": kit.card_blocks()}
            )
        return 200, None

    tiny_bot.reply = reply
    await page.goto(f"{sandbox.url}/?user=U_APPROVER")
    await page.click('[data-testid="home-tab"]')
    home = page.locator('[data-testid="home"]')
    await home.locator('[data-testid="button"][data-action-id="reject"]').click()
    await sandbox.wait_for(lambda sb: tiny_bot.of_kind("block_actions"))
    payload = tiny_bot.of_kind("block_actions")[0].payload
    assert payload["container"]["type"] == "view" and payload["view"]["type"] == "home"
