"""`live`: the real bot on the sandbox with receipts signed (SAYSO_SIGNING_KEY), and an API key."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.receipts import ReceiptSigner, new_signing_key
from tests.e2e.api_flows import make_key
from tests.e2e.harness import Harness, running_harness


@dataclass
class Live:
    h: Harness
    key: str
    signer: ReceiptSigner


@pytest.fixture
async def live(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Live]:
    signing_key = new_signing_key()
    monkeypatch.setenv("SAYSO_SIGNING_KEY", signing_key)  # read by the API front at start
    # the webhook receivers here listen on 127.0.0.1: private addresses need an allowlist entry
    monkeypatch.setenv("SAYSO_CALLBACK_HOSTS", "127.0.0.1")
    async with running_harness(tmp_path) as h:
        token, _ = await make_key(h, "agents", ["C_GENERAL"])
        yield Live(h, token, ReceiptSigner.from_text(signing_key))
