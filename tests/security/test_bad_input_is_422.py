"""Finding 13: input that used to answer 500 is refused with 422 naming the field, on SQLite
and PostgreSQL; the models say their bounds in the OpenAPI document, and JSON types are not
coerced."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.api_flows import create, http, make_key
from tests.e2e.harness import Harness, running_harness
from tests.helpers.postgres import PG_URL, fresh_postgres


@pytest.fixture(params=["sqlite", "postgres"])
async def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Harness]:
    if request.param == "sqlite":
        async with running_harness(tmp_path) as h:
            yield h
        return
    if not PG_URL:
        pytest.skip("set SAYSO_TEST_POSTGRES_URL to run the PostgreSQL case")
    async with fresh_postgres(PG_URL) as url, running_harness(tmp_path, url) as h:
        yield h


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": value}
    return value


CASES: list[tuple[dict[str, Any], str]] = [
    ({"arguments": _nested(60)}, "arguments"),
    ({"context": _nested(60)}, "context"),
    ({"expires_in": 1e12}, "expires_in"),
    ({"min_approvals": 2**40}, "min_approvals"),
    ({"title": "deploy\x00now"}, "title"),
    ({"arguments": {"v": "a\x00b"}}, "arguments"),
    ({"channel": "C" * 65}, "channel"),
    ({"thread_ts": "1" * 70}, "thread_ts"),
    ({"requested_by": "U" * 70}, "requested_by"),
    ({"requested_by": "<!channel>"}, "requested_by"),
    ({"approvers": ["U" * 70]}, "approvers"),
    ({"tool": "t" * 201}, "tool"),
    ({"idempotency_key": "k" * 201}, "idempotency_key"),
    ({"allow_self_approval": 0}, "allow_self_approval"),
    ({"min_approvals": "2"}, "min_approvals"),
    ({"min_approvals": True}, "min_approvals"),
    ({"title": 5}, "title"),
    ({"callback_url": "https://W/u\u0086"}, "callback_url"),  # the fuzzer: not a URI
    ({"allowed_decisions": ["edit", "edit", "edit"]}, "allowed_decisions"),  # the fuzzer: 500
    ({"allowed_decisions": ["edit"]}, "allowed_decisions"),  # Edit without a schema
]


async def test_bad_fields_are_422_naming_them(any_db: Harness) -> None:
    h = any_db
    token, _ = await make_key(h)
    for case, field in CASES:
        body = dict(case)
        r = await create(h, token, tool=body.pop("tool", "deploy"), **body)
        assert r.status_code == 422, (field, r.status_code, r.text[:300])
        assert field in r.json()["error"]["message"], (field, r.text[:300])
    async with http(h, token) as client:
        raw = b'{"title": "x", "arguments": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        r = await client.post("/v1/requests", content=raw)
        assert r.status_code == 422 and "body" in r.json()["error"]["message"], r.text[:300]
        for bad_id in ("x" * 65, "a%00b"):
            r = await client.get(f"/v1/requests/{bad_id}")
            assert r.status_code in (404, 422), r.text[:300]
        ok = (await create(h, token, tool="deploy")).json()["id"]
        r = await client.post(f"/v1/requests/{ok}/cancel", json={"reason": "no\x00pe"})
        assert r.status_code == 422 and "reason" in r.json()["error"]["message"], r.text


async def test_the_openapi_document_states_the_bounds(any_db: Harness) -> None:
    async with http(any_db, None) as client:
        doc = (await client.get("/v1/openapi.json")).json()
    body = doc["components"]["schemas"]["CreateRequest"]["properties"]
    assert body["expires_in"]["anyOf"][0]["maximum"] > 0
    assert body["min_approvals"]["maximum"] >= 1
    assert "pattern" in body["requested_by"]["anyOf"][0]
    assert body["callback_url"]["anyOf"][0]["format"] == "uri"
