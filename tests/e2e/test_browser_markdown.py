"""The sandbox page in Chromium shows an answer streaming in, then formatted: Markdown with
a heading, bold text and a table block."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.e2e.harness import Harness
from tests.helpers.browser import ARTIFACTS, chromium

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ANSWER = (
    "## Staging report\n\nEverything is **healthy** after the deploy, see the table:\n\n"
    "| service | state | replicas |\n|---|---|--:|\n| api | up | 3 |\n| worker | up | 2 |\n\n"
    "Ask me to roll back if anything looks wrong."
)


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    async with chromium() as b:
        yield b


async def test_a_streamed_markdown_answer_with_a_table(harness: Harness, browser: Any) -> None:
    h = harness
    h.model.stream_delay = 0.04  # a model writing: the page shows the text as it comes
    h.model.reply(text=ANSWER)
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(f"{h.sandbox.url}/?user=U_REQUESTER")
    await page.get_by_test_id("status").filter(has_text="live").wait_for()
    await page.get_by_test_id("composer").fill("/sayso ops how is staging")
    await page.get_by_test_id("send").click()
    await h.sandbox.wait_for(lambda sb: sb.messages("C_GENERAL"), timeout=10)
    root_ts = h.root()["ts"]
    await page.locator(f'[data-testid="replies"][data-ts="{root_ts}"]').click()
    panel = page.get_by_test_id("thread-panel")

    streaming = panel.locator('[data-testid="streamed-text"].streaming')
    await streaming.wait_for(timeout=10_000)  # the answer while it streams
    assert "Staging report" in await streaming.inner_text()
    (ARTIFACTS / "browser").mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "browser" / "5-streaming.png"), full_page=True)

    table = panel.get_by_test_id("table-block")
    await table.wait_for(timeout=10_000)  # then the formatted answer replaces it
    assert await panel.locator('[data-testid="streamed-text"]').count() == 0
    cells = await table.locator("td").all_inner_texts()
    assert cells == ["api", "up", "3", "worker", "up", "2"]
    await panel.locator(".bk-markdown b", has_text="healthy").wait_for()
    await panel.locator(".md-h", has_text="Staging report").wait_for()
    await page.screenshot(path=str(ARTIFACTS / "browser" / "6-markdown-answer.png"), full_page=True)


async def test_the_assistant_pane_in_the_page(harness: Harness, browser: Any) -> None:
    h = harness
    h.model.reply(text="I can **deploy**, restart and look up tickets.")
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    await page.goto(f"{h.sandbox.url}/?user=U_REQUESTER")
    await page.get_by_test_id("status").filter(has_text="live").wait_for()
    await page.get_by_test_id("assistant-open").click()
    panel = page.get_by_test_id("thread-panel")
    prompt = panel.get_by_test_id("assistant-prompt").first
    await prompt.wait_for(timeout=10_000)  # the agents as suggested prompts
    assert "ops" in await prompt.inner_text()
    await prompt.click()
    await panel.locator(".bk-markdown b", has_text="deploy").wait_for(timeout=10_000)
    assert await panel.get_by_test_id("assistant-status").count() == 0  # cleared by the reply
    (ARTIFACTS / "browser").mkdir(exist_ok=True)
    await page.screenshot(path=str(ARTIFACTS / "browser" / "7-assistant-pane.png"), full_page=True)
