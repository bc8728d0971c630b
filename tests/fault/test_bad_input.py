"""Bad input against the real bot in HTTP mode (in process, SQLite): forged, stale, replayed,
malformed, oversized and mismatched requests get a 4xx or an ephemeral error, change nothing,
log no unhandled exception, and the bot keeps answering.

Hypothesis drives the requests from a worker thread (sync HTTP) while the bot, the sandbox and
the fake model run on the test's event loop; every example is checked against a snapshot of
the state (runs, approval requests, tool executions, messages) taken after the bot settled.
With `SAYSO_TEST_SPLIT=1` the bot is a front handing its runs to a worker on its own thread
and event loop, as `sayso run` is.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import string
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slack_sdk.signature import SignatureVerifier

from bot.compose import build_bot
from bot.config import Settings
from bot.front import Bot
from bot.sandbox import SlackSandbox, payloads
from bot.sandbox.core import ResponseUrl
from bot.serve import free_port
from bot.service.registry import AgentRegistry
from bot.testing import FakeModelServer
from bot.worker import EmbeddedWorker
from tests.fault.agents import ANSWER, executions, make_agents, respond
from tests.fault.cluster import SPLIT
from tests.fault.slack import (
    FORM,
    SECRET,
    TOKEN,
    cards,
    click_payload,
    form_body,
    message_text,
    request_id,
    sign,
    signed_headers,
)
from tests.helpers.waiting import eventually

KNOWN_ACTIONS = ("approve", "edit", "reject", "answer", "review", "view_args", "retry")
KNOWN_VIEWS = ("sayso_edit", "sayso_reject", "sayso_answer", "sayso_review")
HEADER_TEXT = st.text(alphabet=string.ascii_letters + string.digits + "=:+/-_.", max_size=90)
EXAMPLES = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@dataclass
class Live:
    """The bot on 127.0.0.1 with two runs waiting on cards A and B."""

    bot: Bot
    sandbox: SlackSandbox
    model: FakeModelServer
    port: int
    effects: Path
    loop: asyncio.AbstractEventLoop
    card_a: dict[str, Any]
    card_b: dict[str, Any]
    worker: EmbeddedWorker | None = None
    """Split mode: the worker that drives the runs the bot hands off."""
    _clock: itertools.count = field(default_factory=itertools.count)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/slack/events"

    # -- from the hypothesis thread --------------------------------------------------------

    def call(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def on_loop(self, fn: Callable[[], Any]) -> Any:
        async def run() -> Any:
            return fn()

        return self.call(run())

    def post(
        self, client: httpx.Client, body: str | bytes, headers: dict[str, str]
    ) -> httpx.Response:
        response = client.post(self.url, content=body, headers=headers)
        self.call(self.settle())
        return response

    # -- on the loop -------------------------------------------------------------------------

    async def settle(self, within: float = 15) -> None:
        """Wait until Bolt's listeners and the runner have nothing left to do."""

        def idle() -> bool:
            busy = [
                t
                for t in asyncio.all_tasks()
                if "run_ack_function_asynchronously" in getattr(t.get_coro(), "__qualname__", "")
            ]
            worker_busy = self.worker is not None and self.worker.busy
            return not busy and not self.bot.service.busy and not worker_busy

        await eventually(idle, timeout=within, interval=0.01, what="the bot to settle")

    async def snapshot(self) -> tuple[Any, ...]:
        store = self.bot.store
        runs = await store.runs.list(limit=1000)
        requests = []
        for run in runs:
            requests += [
                (q.id, q.state.status, q.state.decided_by)
                for q in await store.requests.for_run(run.id)
            ]
        sb = self.sandbox
        messages = sum(len(sb.thread("C_GENERAL", m["ts"])) for m in sb.messages("C_GENERAL"))
        return (
            sorted((r.id, r.status) for r in runs),
            sorted(requests),
            len(executions(self.effects)),
            messages,
        )

    def headers(self, body: str | bytes, content_type: str = FORM) -> dict[str, str]:
        """Correctly signed, each call at another second of the 5-minute window, so that
        Hypothesis re-running an example is not refused as a replay of itself."""
        ts = int(time.time()) - next(self._clock) % 240
        return signed_headers(SECRET, body, timestamp=str(ts), content_type=content_type)

    def ephemerals(self, user: str) -> int:
        return len(self.sandbox.ephemerals(user))

    # -- building requests ---------------------------------------------------------------------

    def slash_body(self, text: str = "ops deploy v2 to staging") -> str:
        sb = self.sandbox
        person = sb.person("U_REQUESTER")
        channel = sb.ws.ensure_channel("C_GENERAL")
        target = ResponseUrl(channel="C_GENERAL", user="U_REQUESTER")
        fields = payloads.slash_command(
            person,
            channel,
            "/sayso",
            text,
            sb.issue_response_url(target),
            sb.issue_trigger("U_REQUESTER"),
        )
        return urlencode(fields)

    def click_body(self, user: str, action_id: str = "approve", **kw: Any) -> str:
        payload = click_payload(self.sandbox, user, "C_GENERAL", self.card_a["ts"], "approve")
        payload["actions"][0]["action_id"] = action_id
        payload["actions"][0].update(kw)
        return form_body(payload)


async def start_card(sandbox: SlackSandbox) -> dict[str, Any]:
    before = len(sandbox.messages("C_GENERAL"))
    delivery = await sandbox.slash_command("U_REQUESTER", "ops deploy v2 to staging")
    assert delivery.ok, delivery.summary()
    await sandbox.wait_for(
        lambda sb: len(sb.messages("C_GENERAL")) > before and cards(sb), timeout=15
    )
    return cards(sandbox)[0]


@pytest.fixture
async def live(tmp_path: Path) -> AsyncIterator[Live]:
    model = FakeModelServer(responder=respond)
    await model.start()
    sandbox = SlackSandbox(signing_secret=SECRET, bot_url=None, bot_token=TOKEN)
    await sandbox.start(host="127.0.0.1", port=0)
    effects = tmp_path / "effects.jsonl"
    config = Settings(  # type: ignore[call-arg]
        _env_file=None,
        slack_bot_token=TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=sandbox.api_url,
        database_url=f"sqlite+aiosqlite:///{tmp_path / 'sayso.db'}",
        sayso_sweep_interval=0.2,
        sayso_lease_seconds=3,
    )
    agents = AgentRegistry(make_agents(model.base_url, effects))
    bot = build_bot(config, agents)
    worker = EmbeddedWorker(config, agents) if SPLIT else None
    if worker is not None:
        worker.attach(bot)
    await bot.start()
    if worker is not None:
        await worker.start()
    runner = web.AppRunner(bot.web_app(), access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    sandbox.bot_url = f"http://127.0.0.1:{port}/slack/events"
    try:
        card_a = await start_card(sandbox)
        card_b = await start_card(sandbox)
        loop = asyncio.get_running_loop()
        yield Live(bot, sandbox, model, port, effects, loop, card_a, card_b, worker)
    finally:
        await runner.cleanup()
        if worker is not None:
            await worker.stop()
        await bot.stop()
        await sandbox.stop()
        await model.stop()


@pytest.fixture
def clean_log(caplog: pytest.LogCaptureFixture):  # type: ignore[no-untyped-def]
    """Fail the test when sayso (or the HTTP server) logged an error or a traceback."""
    caplog.set_level(logging.INFO)
    yield caplog
    bad = [
        r
        for r in caplog.records
        if (r.levelno >= logging.ERROR or r.exc_info)
        and r.name.split(".")[0] in ("sayso", "aiohttp", "asyncio")
    ]
    assert not bad, "\n".join(f"{r.name} {r.levelname} {r.getMessage()}" for r in bad)


async def still_works(live: Live) -> None:
    """/healthz answers and the normal flow works: approving card A runs the tool once."""
    async with httpx.AsyncClient() as client:
        health = await client.get(f"http://127.0.0.1:{live.port}/healthz")
    assert health.status_code == 200
    before = len(executions(live.effects))
    delivery = await live.sandbox.click("U_APPROVER", "C_GENERAL", live.card_a["ts"], "approve")
    assert delivery.ok, delivery.summary()
    root = live.card_a["thread_ts"]
    await live.sandbox.wait_for(
        lambda sb: any(ANSWER in message_text(m) for m in sb.thread("C_GENERAL", root)),
        timeout=15,
    )
    assert len(executions(live.effects)) == before + 1


async def in_thread(fn: Callable[[], None]) -> None:
    await asyncio.to_thread(fn)


# -- the tests --------------------------------------------------------------------------------


def test_signing_helper_matches_slack_sdk() -> None:
    body = "payload=%7B%22type%22%3A%22block_actions%22%7D"
    ts = str(int(time.time()))
    verifier = SignatureVerifier(SECRET)
    assert verifier.is_valid(body, ts, sign(SECRET, ts, body))
    assert not verifier.is_valid(body, ts, sign("other", ts, body))


async def test_forged_and_stale_requests_are_refused(live: Live, clean_log: Any) -> None:
    faults = st.one_of(
        st.tuples(st.just("no_headers"), st.none()),
        st.tuples(st.just("no_signature"), st.none()),
        st.tuples(st.just("no_timestamp"), st.none()),
        st.tuples(st.just("wrong_secret"), st.text(min_size=1, max_size=40)),
        st.tuples(st.just("garbage_signature"), HEADER_TEXT),
        st.tuples(st.just("garbage_timestamp"), HEADER_TEXT),
        st.tuples(
            st.just("stale"),
            st.one_of(st.integers(301, 10**8), st.integers(-(10**8), -301)),
        ),
        st.tuples(st.just("tampered"), st.text(min_size=1, max_size=40)),
    )

    ran: list[int] = []

    def run() -> None:
        before = live.call(live.snapshot())
        with httpx.Client(timeout=10) as client:

            @EXAMPLES
            @given(kind=st.sampled_from(["command", "approve"]), fault=faults)
            def check(kind: str, fault: tuple[str, Any]) -> None:
                ran.append(1)
                name, arg = fault
                body = live.on_loop(
                    live.slash_body if kind == "command" else lambda: live.click_body("U_APPROVER")
                )
                now = int(time.time())
                headers = signed_headers(SECRET, body)
                if name == "no_headers":
                    headers = {"Content-Type": FORM}
                elif name == "no_signature":
                    del headers["X-Slack-Signature"]
                elif name == "no_timestamp":
                    del headers["X-Slack-Request-Timestamp"]
                elif name == "wrong_secret":
                    headers = signed_headers(SECRET + arg, body)
                elif name == "garbage_signature":
                    headers["X-Slack-Signature"] = arg
                elif name == "garbage_timestamp":
                    headers["X-Slack-Request-Timestamp"] = arg
                    headers["X-Slack-Signature"] = sign(SECRET, arg, body)
                elif name == "stale":
                    headers = signed_headers(SECRET, body, timestamp=str(now - arg))
                elif name == "tampered":
                    body = body + "&" + urlencode({"text": arg})
                response = live.post(client, body, headers)
                assert 400 <= response.status_code < 500, (name, response.status_code)
                assert live.call(live.snapshot()) == before

            check()

    await in_thread(run)
    assert len(ran) >= 20  # hypothesis really tried many requests
    await still_works(live)


async def test_malformed_bodies_are_refused(live: Live, clean_log: Any) -> None:
    json_values = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    )
    not_json = st.text(max_size=60).filter(lambda t: not _is_json(t))
    payload_objects = st.fixed_dictionaries(
        {},
        optional={
            "type": st.sampled_from(
                ["block_actions", "view_submission", "view_closed", "shortcut", "nonsense"]
            ),
            "user": json_values,
            "team": json_values,
            "actions": json_values,
            "view": json_values,
            "container": json_values,
        },
    )
    bodies = st.one_of(
        not_json.map(lambda t: "payload=" + quote(t)),
        json_values.filter(lambda v: not isinstance(v, dict)).map(
            lambda v: "payload=" + quote(json.dumps(v))
        ),
        payload_objects.map(lambda v: "payload=" + quote(json.dumps(v))),
        st.text(max_size=60).map(lambda t: "{" + t),  # looks like JSON, is not
        json_values.map(json.dumps),
        st.text(max_size=80),
    )

    ran: list[int] = []

    def run() -> None:
        before = live.call(live.snapshot())
        with httpx.Client(timeout=10) as client:

            @EXAMPLES
            @given(body=bodies, content_type=st.sampled_from([FORM, "application/json"]))
            def check(body: str, content_type: str) -> None:
                ran.append(1)
                headers = live.headers(body, content_type)
                response = live.post(client, body.encode(), headers)
                assert response.status_code < 500, (body, response.status_code, response.text)
                assert live.call(live.snapshot()) == before

            check()

    await in_thread(run)
    assert len(ran) >= 20  # hypothesis really tried many requests
    await still_works(live)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


async def test_oversized_bodies_get_413(live: Live, clean_log: Any) -> None:
    before = await live.snapshot()
    async with httpx.AsyncClient(timeout=30) as client:
        for size in (1024 * 1024 + 1, 3 * 1024 * 1024):
            body = "payload=" + "x" * size
            for headers in (signed_headers(SECRET, body), {"Content-Type": FORM}):
                response = await client.post(live.url, content=body, headers=headers)
                assert response.status_code == 413
    await live.settle()
    assert await live.snapshot() == before
    await still_works(live)


async def test_unknown_actions_and_foreign_values_change_nothing(
    live: Live, clean_log: Any
) -> None:
    other_request = request_id(live.card_b)
    runs = await live.bot.store.runs.list()
    other_run = next(r.id for r in runs if r.thread_ts == live.card_b["thread_ts"])
    values = st.one_of(
        st.just(other_request),
        st.just(other_run),
        st.just(""),
        st.text(max_size=40),
        st.uuids().map(lambda u: u.hex),
    )
    unknown = st.text(min_size=1, max_size=30).filter(lambda a: a not in KNOWN_ACTIONS)
    users = st.sampled_from(["U_APPROVER", "U_MEMBER", "U_GUEST", "U_EXTERNAL"])

    ran: list[int] = []

    def run() -> None:
        before = live.call(live.snapshot())
        with httpx.Client(timeout=10) as client:

            @EXAMPLES
            @given(
                user=users,
                action_id=st.one_of(unknown, st.sampled_from(KNOWN_ACTIONS)),
                value=values,
            )
            def check(user: str, action_id: str, value: str) -> None:
                ran.append(1)
                body = live.on_loop(lambda: live.click_body(user, action_id, value=value))
                seen = live.on_loop(lambda: live.ephemerals(user))
                response = live.post(client, body, live.headers(body))
                assert response.status_code < 500
                if action_id in KNOWN_ACTIONS:
                    assert response.status_code == 200
                    if action_id in ("approve", "retry"):
                        # the person is told why nothing happened
                        assert live.on_loop(lambda: live.ephemerals(user)) > seen, (
                            action_id,
                            value,
                        )
                    else:
                        # ... in the modal the click opened at once (a loading view)
                        views = live.on_loop(lambda: live.sandbox.open_views(user))
                        assert [v["callback_id"] for v in views] == ["sayso_notice"], views
                        assert "Loading" not in str(views[0]["blocks"]), (action_id, value)
                        ids = [v["id"] for v in views]
                        live.on_loop(lambda: live.sandbox.ws.close_views(user, ids))
                else:
                    assert 400 <= response.status_code < 500
                assert live.call(live.snapshot()) == before
                assert live.on_loop(lambda: live.sandbox.open_views(user)) == []

            check()

    await in_thread(run)
    assert len(ran) >= 20  # hypothesis really tried many requests
    await still_works(live)


async def test_bad_view_submissions_change_nothing(live: Live, clean_log: Any) -> None:
    rid = request_id(live.card_a)
    field_values = st.one_of(
        st.none(),
        st.text(max_size=20),
        st.integers(),
        st.lists(st.text(max_size=5), max_size=2),
        st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    )

    def state_entry(v: Any) -> Any:
        return {"value": {"type": "plain_text_input", "value": v}}

    extra = st.dictionaries(
        st.text(min_size=1, max_size=12).filter(lambda k: k not in ("environment", "version")),
        field_values.map(state_entry),
        max_size=3,
    )
    bad_env = st.text(max_size=20).filter(lambda t: t.strip() not in ("staging", "production"))
    metadata = st.one_of(st.just(""), st.text(max_size=30), st.uuids().map(lambda u: u.hex))
    cases = st.one_of(
        # unknown callback ids, whatever they carry
        st.tuples(
            st.text(max_size=30).filter(lambda c: c not in KNOWN_VIEWS),
            st.sampled_from(["U_APPROVER", "U_GUEST"]),
            st.one_of(st.just(rid), metadata),
            extra,
        ),
        # known callback ids about a request that does not exist
        st.tuples(st.sampled_from(KNOWN_VIEWS), st.just("U_APPROVER"), metadata, extra),
        # an answer or a review is not a decision an approval request allows
        st.tuples(
            st.sampled_from(["sayso_answer", "sayso_review"]),
            st.just("U_APPROVER"),
            st.just(rid),
            extra.map(lambda e: {**e, "answer": state_entry("x"), "input": state_entry("x")}),
        ),
        # edits with an invalid environment and extra fields
        st.tuples(
            st.just("sayso_edit"),
            st.just("U_APPROVER"),
            st.just(rid),
            st.tuples(extra, bad_env).map(lambda t: {**t[0], "environment": state_entry(t[1])}),
        ),
        # people who may not decide, on the real request
        st.tuples(
            st.sampled_from(KNOWN_VIEWS),
            st.sampled_from(["U_GUEST", "U_EXTERNAL"]),
            st.just(rid),
            extra,
        ),
    )

    ran: list[int] = []

    def run() -> None:
        before = live.call(live.snapshot())
        with httpx.Client(timeout=10) as client:

            @EXAMPLES
            @given(case=cases)
            def check(case: tuple[str, str, str, dict[str, Any]]) -> None:
                ran.append(1)
                callback_id, user, private_metadata, state = case
                person = live.on_loop(lambda: live.sandbox.person(user))
                view = {
                    "id": "V_FAKE",
                    "type": "modal",
                    "callback_id": callback_id,
                    "private_metadata": private_metadata,
                    "blocks": [
                        {"type": "input", "block_id": k, "element": {"type": "plain_text_input"}}
                        for k in state
                    ],
                    "state": {"values": state},
                }
                payload = payloads.view_submission(person, view, "T_FAKE_TRIGGER")
                body = form_body(payload)
                response = live.post(client, body, live.headers(body))
                assert response.status_code < 500, response.text
                if callback_id not in KNOWN_VIEWS:
                    assert 400 <= response.status_code < 500
                assert live.call(live.snapshot()) == before

            check()

    await in_thread(run)
    assert len(ran) >= 20  # hypothesis really tried many requests
    await still_works(live)


async def test_replayed_requests_do_nothing_twice(live: Live, clean_log: Any) -> None:
    sb = live.sandbox
    async with httpx.AsyncClient(timeout=10) as client:
        # a slash command replayed byte for byte within the 5-minute window
        runs_before = len(await live.bot.store.runs.list())
        body = live.slash_body()
        headers = signed_headers(SECRET, body)
        first = await client.post(live.url, content=body, headers=headers)
        assert first.status_code == 200
        await live.settle()
        replay = await client.post(live.url, content=body, headers=headers)
        assert 400 <= replay.status_code < 500
        await live.settle()
        assert len(await live.bot.store.runs.list()) == runs_before + 1
        # an approval replayed: one decision, one execution
        body = live.click_body("U_APPROVER")
        headers = signed_headers(SECRET, body)
        first = await client.post(live.url, content=body, headers=headers)
        assert first.status_code == 200
        replay = await client.post(live.url, content=body, headers=headers)
        assert 400 <= replay.status_code < 500
    root = live.card_a["thread_ts"]
    await sb.wait_for(
        lambda _: any(ANSWER in message_text(m) for m in sb.thread("C_GENERAL", root)), timeout=15
    )
    await live.settle()
    run = await live.bot.store.runs.for_thread("C_GENERAL", root)
    assert run is not None and run.status == "completed"
    trail = [e for e in await live.bot.store.audit.trail(run.id) if e.action == "decide"]
    assert [(e.actor, e.outcome) for e in trail] == [("U_APPROVER", "won")]
    assert len(executions(live.effects)) == 1
    assert sb.ephemerals("U_APPROVER") == []
    # dedupe is by Slack's trigger id (the durable intake): the same command signed again at
    # another second is still one interaction; the same text typed again is another
    body = live.slash_body()
    runs_before = len(await live.bot.store.runs.list())
    async with httpx.AsyncClient(timeout=10) as client:
        for ts in (int(time.time()), int(time.time()) - 1):
            headers = signed_headers(SECRET, body, timestamp=str(ts))
            assert (await client.post(live.url, content=body, headers=headers)).status_code == 200
        again = live.slash_body()  # a new trigger id
        headers = signed_headers(SECRET, again)
        assert (await client.post(live.url, content=again, headers=headers)).status_code == 200
    await live.settle()
    assert len(await live.bot.store.runs.list()) == runs_before + 2
