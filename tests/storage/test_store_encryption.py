"""Encryption at rest: with SAYSO_ENCRYPTION_KEYS set, run state, request arguments, edited
arguments, outputs and reasons never reach the database in plaintext; keys rotate (issue 11,
finding 9)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from cryptography.fernet import Fernet

from bot.agent.state import Run, RunResult
from store import EncryptionKeyError, Store
from tests.storage.store_helpers import StoreFactory, policy

SECRET_ARG = "hunter2-deploy-token"
SECRET_EDIT = "edited-s3cret-value"
SECRET_REASON = "because-the-vault-said-so"
SECRET_TEXT = "the-requesters-private-words"
KEY_A = Fernet.generate_key().decode()
KEY_B = Fernet.generate_key().decode()
PLAINTEXTS = (SECRET_ARG, SECRET_EDIT, SECRET_REASON, SECRET_TEXT)


async def _secret_run(store: Store, run_id: str = "r1") -> str:
    """A run paused on a call whose argument is secret, then approved with edits."""
    from bot.agent.messages import Message, ToolCall
    from bot.agent.state import Pause, PendingToolCall

    lease = await store.runs.create(
        run_id=run_id,
        agent_id="ops",
        requester="U1",
        team_id="T1",
        channel_id="C1",
        thread_ts=None,
        request_text="deploy",
    )
    call = ToolCall(id="c1", name="deploy", arguments={"token": SECRET_ARG})
    run = Run(
        id=run_id,
        agent_id="ops",
        model="scripted:list",
        status="waiting_for_human",
        step=1,
        messages=[Message(role="user", content=SECRET_TEXT)],
        pause=Pause(
            kind="tool_approval",
            step=1,
            pending_tool_calls=[PendingToolCall(call=call, kind="approval")],
        ),
    )
    await store.runs.accessor(lease, policy([])).save(RunResult(run=run))
    (request,) = await store.requests.current(run_id)
    await store.requests.decide(
        request.id,
        actor="U2",
        status="edited",
        reason=SECRET_REASON,
        edited_arguments={"token": SECRET_EDIT},
    )
    return request.id


async def _raw_rows(store: Store) -> str:
    """Everything in the two tables, as the database hands it out (no decryption)."""
    async with store.db.read() as conn:
        runs = (await conn.execute(sa.text("SELECT * FROM runs"))).all()
        requests = (await conn.execute(sa.text("SELECT * FROM approval_requests"))).all()
        audit = (await conn.execute(sa.text("SELECT * FROM audit_events"))).all()
    return repr(runs) + repr(requests) + repr(audit)


async def _check_readable(store: Store, request_id: str) -> None:
    request = await store.requests.get(request_id)
    assert request is not None
    assert request.spec.arguments == {"token": SECRET_ARG}
    assert request.state.edited_arguments == {"token": SECRET_EDIT}
    assert request.state.reason == SECRET_REASON
    result = await store.runs.load_result("r1")
    assert result is not None and result.run.messages[0].content == SECRET_TEXT


async def test_with_a_key_nothing_secret_is_stored_in_plaintext(
    make_store: StoreFactory, db_url: str
) -> None:
    store = await make_store(encryption_keys=[KEY_A])
    await store.upgrade()
    request_id = await _secret_run(store)
    raw = await _raw_rows(store)
    assert not [p for p in PLAINTEXTS if p in raw]
    await _check_readable(store, request_id)
    if db_url.startswith("sqlite"):
        await store.close()
        path = Path(db_url.split("///", 1)[1])
        files = [path, Path(f"{path}-wal")]
        on_disk = b"".join(f.read_bytes() for f in files if f.exists())
        assert not [p for p in PLAINTEXTS if p.encode() in on_disk]


async def test_without_a_key_values_are_stored_as_they_are(make_store: StoreFactory) -> None:
    store = await make_store()
    await store.upgrade()
    await _secret_run(store)
    assert SECRET_ARG in await _raw_rows(store)  # the test above would notice a plaintext


async def test_reading_encrypted_data_without_the_key_is_a_clear_error(
    make_store: StoreFactory,
) -> None:
    store = await make_store(encryption_keys=[KEY_A])
    await store.upgrade()
    request_id = await _secret_run(store)
    keyless = await make_store()
    with pytest.raises(EncryptionKeyError, match="SAYSO_ENCRYPTION_KEYS is not set"):
        await keyless.requests.get(request_id)
    wrong = await make_store(encryption_keys=[KEY_B])
    with pytest.raises(EncryptionKeyError, match="None of the keys"):
        await wrong.runs.load_result("r1")


async def test_rotation_with_two_keys(make_store: StoreFactory) -> None:
    old = await make_store(encryption_keys=[KEY_A])
    await old.upgrade()
    request_id = await _secret_run(old)
    both = await make_store(encryption_keys=[KEY_B, KEY_A])  # new key first
    await _check_readable(both, request_id)
    # state, request text, arguments, edited arguments, reason, and the audit detail quoting
    # the reason
    assert await both.reencrypt(batch=1) == 6
    new_only = await make_store(encryption_keys=[KEY_B])
    await _check_readable(new_only, request_id)
    with pytest.raises(EncryptionKeyError):
        await (await make_store(encryption_keys=[KEY_A])).requests.get(request_id)


async def test_reencrypt_encrypts_rows_written_before_the_key(make_store: StoreFactory) -> None:
    plain = await make_store()
    await plain.upgrade()
    request_id = await _secret_run(plain)
    keyed = await make_store(encryption_keys=[KEY_A])
    await _check_readable(keyed, request_id)  # old plaintext rows stay readable
    await keyed.reencrypt()
    raw = await _raw_rows(keyed)
    assert not [p for p in PLAINTEXTS if p in raw]
    await _check_readable(keyed, request_id)


def test_a_malformed_key_is_refused() -> None:
    with pytest.raises(ValueError, match="not a Fernet key"):
        Store("sqlite+aiosqlite:///:memory:", encryption_keys=["not-a-key"])


async def test_running_state_round_trips_encrypted(make_store: StoreFactory) -> None:
    store = await make_store(encryption_keys=[KEY_A])
    await store.upgrade()
    lease = await store.runs.create(
        run_id="r9",
        agent_id="ops",
        requester="U1",
        team_id="T1",
        channel_id="C1",
        thread_ts=None,
        request_text="go",
    )
    await store.runs.accessor(lease, policy([])).save(
        RunResult(run=Run(id="r9", agent_id="ops", model="scripted:list"))
    )
    run = await store.runs.get("r9")
    assert run is not None and run.result is not None and run.result.run.id == "r9"


async def test_webhook_secrets_are_encrypted_and_rotate(make_store: StoreFactory) -> None:
    """An API key's webhook secret (sayso signs deliveries with it) is encrypted like the rest,
    and `sayso db reencrypt` rewrites it with the new key."""
    from store import api as api_ops

    secret = "whsec_" + "s3cret-signing-value"
    old = await make_store(encryption_keys=[KEY_A])
    await old.upgrade()
    assert await api_ops.create_key(old.db, "ci", "sk_sayso_token", secret, [])
    async with old.db.read() as conn:
        raw = (await conn.execute(sa.text("SELECT webhook_secret FROM api_keys"))).scalar_one()
    assert secret not in raw
    rotated = await make_store(encryption_keys=[KEY_B, KEY_A])
    assert await rotated.reencrypt() >= 1
    only_new = await make_store(encryption_keys=[KEY_B])
    key = await api_ops.get_key(only_new.db, "ci")
    assert key is not None and key.webhook_secret == secret


async def test_api_titles_and_context_are_encrypted(make_store: StoreFactory) -> None:
    """Security round two, finding 9: an API request's title (the run's request text and its
    spec) and its context (where the OpenAI Agents adapter keeps the conversation) are stored
    encrypted when the store has keys, and read back as written."""
    from datetime import UTC, datetime, timedelta

    from store import api as api_ops
    from store.api import NewApiRequest

    store = await make_store(encryption_keys=[KEY_A])
    await store.upgrade()
    title, said = "Refund order 7731 for jane@example.com", "the customer said: my PIN is 4412"
    new = NewApiRequest(
        key_name="agents",
        kind="approval",
        tool_name="refund",
        title=title,
        arguments={},
        spec={"description": title, "context": {"conversation": said}},
        channel_id="C1",
        thread_ts=None,
        requester=None,
        approvers=[],
        allow_self_approval=True,
        expires_at=datetime.now(UTC) + timedelta(hours=1),
        idempotency_key=None,
        callback_url=None,
    )
    stored = await api_ops.create_request(store.db, new)
    assert stored.created
    request_id = stored.request.id
    raw = await _raw_rows(store)
    assert title not in raw and said not in raw
    request = await store.requests.get(request_id)
    assert request is not None and request.spec.api_spec is not None
    assert request.spec.api_spec["context"] == {"conversation": said}
    run = await store.runs.get(request.spec.run_id)
    assert run is not None and run.request_text == title
