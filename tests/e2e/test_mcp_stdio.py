"""`sayso mcp` (stdio) on its own: a bad SAYSO_KEY stops the server before it serves anything.
The flows it shares with /mcp run over both transports (test_mcp_server.py,
test_mcp_elicitation.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.e2e.harness import Harness
from tests.e2e.mcp_flows import mcp_stdio

pytestmark = pytest.mark.slow


async def test_a_bad_key_stops_the_stdio_server(harness: Harness, tmp_path: Path) -> None:
    h = harness
    errlog = tmp_path / "stderr.log"
    with pytest.raises(Exception):  # noqa: B017 - the client sees its server go away
        async with mcp_stdio(h, "sk_sayso_not-a-key", errlog):
            pass
    await asyncio.sleep(0)
    assert "SAYSO_KEY" in errlog.read_text()
    assert h.sandbox.messages("C_GENERAL") == []
