"""The /v1 contract, fuzzed: Schemathesis (all phases, all checks) against the live bot on the
sandbox, authenticated with a real key, with a fixed seed and a small budget
(SAYSO_FUZZ_EXAMPLES, default 100 per operation: about 20 s; its settings are in
tests/security/schemathesis.toml; its output is kept in schemathesis.log, in $SAYSO_FUZZ_LOG
if set).

Relaxed, and why: the response time limit is 65 s, not Schemathesis's 10 s
(`GET /v1/requests/{id}?wait=` is a long-poll that answers after up to 60 s by design; the
run sends `wait=0`), and `positive_data_acceptance` is excluded (a schema-valid
`callback_url` whose host the host policy refuses, e.g. a private address, is a 422 the
schema cannot state)."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.e2e.api_flows import make_key
from tests.e2e.harness import Harness

pytestmark = [pytest.mark.slow]


async def test_schemathesis_finds_nothing(harness: Harness, tmp_path: Path) -> None:
    exe = shutil.which("schemathesis") or shutil.which("st")
    if exe is None:
        pytest.skip("schemathesis is not installed (pip install 'sayso[test]')")
    h = harness
    assert h.bot is not None
    from store import api as api_ops

    token, _ = await make_key(h, "fuzz")
    await api_ops.set_key_quota(h.bot.store.db, "fuzz", 1_000_000)
    process = await asyncio.create_subprocess_exec(
        exe,
        "--config-file",
        str(Path(__file__).with_name("schemathesis.toml")),
        "run",
        f"{h.url}/v1/openapi.json",
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance",
        "--header",
        f"Authorization: Bearer {token}",
        "--max-examples",
        os.environ.get("SAYSO_FUZZ_EXAMPLES", "100"),
        "--seed",
        "2126",
        "--request-timeout",
        "70",
        "--max-response-time",
        "65",  # `?wait=` long-polls up to 60 s by design
        "--generation-deterministic",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    started = time.monotonic()
    out, _ = await asyncio.wait_for(process.communicate(), 300)
    text = out.decode(errors="replace")
    (Path(os.environ.get("SAYSO_FUZZ_LOG") or tmp_path) / "schemathesis.log").write_text(text)
    print(f"schemathesis: {time.monotonic() - started:.0f} s")
    assert process.returncode == 0, text[-6000:]
