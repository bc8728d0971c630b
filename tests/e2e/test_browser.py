"""The demo as a person sees it: the sandbox page in Chromium, the real bot behind it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.harness import Harness
from tests.helpers.browser import ARTIFACTS, chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = ARTIFACTS / "browser"


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with chromium() as b:
        SHOTS.mkdir(exist_ok=True)
        yield b


async def shot(page: Any, name: str) -> None:
    await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


async def test_request_edit_approve_and_guest_refusal_in_the_browser(
    harness: Harness, browser: Any
) -> None:
    h = harness
    h.model.reply(tool_calls=[("deploy", {"environment": "staging", "version": "v2"})])
    h.model.reply(text="Deployed v3 to staging.")
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(f"{h.sandbox.url}/?user=U_REQUESTER")
    await page.get_by_test_id("status").filter(has_text="live").wait_for()

    # the requester types the slash command
    await page.get_by_test_id("composer").fill("/sayso ops deploy v2 to staging")
    await page.get_by_test_id("send").click()
    await h.sandbox.wait_for(lambda sb: len(h.cards()) == 1)
    root_ts = h.root()["ts"]
    await page.locator(f'[data-testid="replies"][data-ts="{root_ts}"]').click()
    panel = page.get_by_test_id("thread-panel")
    await panel.locator('[data-testid="button"][data-action-id="approve"]').wait_for()
    await shot(page, "1-card-in-thread")

    # a guest tries to approve and is refused privately
    await page.get_by_test_id("actas").select_option("U_GUEST")
    await page.locator(f'[data-testid="replies"][data-ts="{root_ts}"]').click()
    await panel.locator('[data-testid="button"][data-action-id="approve"]').click()
    await page.get_by_test_id("ephemeral").first.wait_for()
    assert "may" in (await page.get_by_test_id("ephemeral").first.inner_text()).lower()
    await shot(page, "2-guest-refused")
    assert h.effects.deploys == []

    # the approver edits the version and submits
    await page.get_by_test_id("actas").select_option("U_APPROVER")
    await page.locator(f'[data-testid="replies"][data-ts="{root_ts}"]').click()
    await panel.locator('[data-testid="button"][data-action-id="edit"]').click()
    modal = page.get_by_test_id("modal")
    await modal.wait_for()
    await shot(page, "3-edit-modal")
    version = modal.locator('[data-testid="input"][data-block-id="version"]')
    await version.fill("v3")
    await page.get_by_test_id("modal-submit").click()
    await h.sandbox.wait_for(lambda sb: "Deployed v3 to staging." in h.thread_text())
    await panel.get_by_text("Deployed v3 to staging.").wait_for()
    await panel.get_by_text("v3").first.wait_for()
    await shot(page, "4-card-updated-and-answer")
    assert [(d["environment"], d["version"]) for d in h.effects.deploys] == [("staging", "v3")]
