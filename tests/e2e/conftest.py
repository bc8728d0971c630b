"""The `harness` fixture: the real bot between a sandbox Slack and a fake model (see harness.py),
and `mcp`: its MCP server over each transport (see mcp_flows.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.harness import Harness, running_harness
from tests.e2e.mcp_flows import mcp  # noqa: F401 - the fixture


@pytest.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    async with running_harness(tmp_path) as h:
        yield h
