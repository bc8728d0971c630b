"""The live bot between the sandbox Slack and a fake model (tests/e2e/harness.py), for tests
that attack it from outside: signed HTTP, the /v1 API with a real key, the MCP SDK's client."""

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
