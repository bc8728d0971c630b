"""Debian's Chromium under Playwright for the browser tests (never a downloaded browser)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
HAVE_CHROMIUM = os.path.exists(CHROMIUM)
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


@asynccontextmanager
async def chromium() -> AsyncIterator[Any]:
    """A headless browser; skips the test without Chromium (fails under SAYSO_REQUIRE_BROWSER)."""
    if not HAVE_CHROMIUM:
        if os.environ.get("SAYSO_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SAYSO_REQUIRE_BROWSER=1 but {CHROMIUM} is missing (apt install chromium)")
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium to run browser tests")
    from playwright.async_api import async_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield browser
        finally:
            await browser.close()
