"""What is measured: ack latency per concurrency, decisions per second, memory, inbox query."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
import sqlalchemy as sa
from common import approve_body, cpu_seconds, percentile, slash_body
from data import clone_paused_runs, seed_requests
from load import LoadResult, Proc, SideEffects, drive
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from store import Store
from store.schema import approval_requests as req
from store.schema import runs

CHANNELS = 50  # runs are spread over channels, as in a workspace


@dataclass
class Card:
    request_id: str
    run_id: str
    call_id: str
    channel_id: str
    message_ts: str

    @property
    def key(self) -> str:
        return f"{self.run_id}:{self.call_id}"


class BotUnderTest:
    """The bot's processes plus a read-only view of its database.

    `proc` serves Slack's requests (`url`); `workers` are `sayso worker` processes beside it
    (each with the URL of its bench port), started after it and stopped before it."""

    def __init__(
        self,
        proc: Proc,
        url: str,
        database_url: str,
        effects: SideEffects,
        slack_url: str,
        workers: list[tuple[Proc, str]] | None = None,
    ) -> None:
        self.proc = proc
        self.url = url
        self.events_url = f"{url}/slack/events"
        self.database_url = database_url
        self.effects = effects
        self.slack_url = slack_url
        self.response_url = f"{slack_url}/sandbox/response/bench"
        self.workers = workers or []
        self.engine: AsyncEngine | None = None
        self.sent = 0

    @property
    def procs(self) -> list[Proc]:
        return [self.proc, *(w for w, _ in self.workers)]

    def cpu_seconds(self) -> dict[str, float]:
        """User + system CPU seconds so far of every bot process, by process name."""
        return {p.name: cpu_seconds(p.pid) for p in self.procs}

    async def __aenter__(self) -> BotUnderTest:
        await self.proc.start()
        await asyncio.gather(*(w.start() for w, _ in self.workers))
        async with aiohttp.ClientSession() as session:
            for url in [self.url, *(u for _, u in self.workers)]:
                async with session.get(f"{url}/healthz") as resp:
                    assert resp.status == 200, await resp.text()
        self.engine = create_async_engine(self.database_url)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.engine is not None:
            await self.engine.dispose()
        await asyncio.gather(*(w.stop() for w, _ in self.workers))
        await self.proc.stop()

    # -- reading the bot ---------------------------------------------------------------
    async def slack_calls(self) -> dict[str, int]:
        """Web API calls the bot made so far, by method (the fake Slack counts them)."""
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{self.slack_url}/bench/calls", params={"by": "block"}) as r:
                return dict(await r.json())

    async def rss(self, gc: bool = True) -> dict[str, int]:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{self.url}/bench/rss", params={"gc": "1" if gc else "0"}) as r:
                return await r.json()

    async def cards(self) -> list[Card]:
        """Pending approval requests whose card is posted, oldest first."""
        assert self.engine is not None
        query = (
            sa.select(req.c.id, req.c.run_id, req.c.call_id, req.c.channel_id, req.c.message_ts)
            .where(req.c.status == "pending", req.c.message_ts.is_not(None))
            .order_by(req.c.created_at)
        )
        async with self.engine.connect() as conn:
            return [Card(*row) for row in (await conn.execute(query)).all()]

    async def count_runs(self, status: str) -> int:
        assert self.engine is not None
        query = sa.select(sa.func.count()).select_from(runs).where(runs.c.status == status)
        async with self.engine.connect() as conn:
            return int(await conn.scalar(query) or 0)

    async def wait(self, what: str, predicate: Any, within: float) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if await predicate():
                return
            await asyncio.sleep(0.05)
        raise TimeoutError(f"bot did not reach '{what}' within {within}s")

    async def idle(self, within: float = 120.0) -> None:
        """Wait until no process of the bot has background work (runs, post-ack work)."""

        async def busy(session: aiohttp.ClientSession, url: str) -> int:
            async with session.get(f"{url}/bench/rss", params={"gc": "0"}) as r:
                return int((await r.json())["background_tasks"])

        async def quiet() -> bool:
            urls = [self.url, *(u for _, u in self.workers)]
            async with aiohttp.ClientSession() as session:
                return not any(await asyncio.gather(*(busy(session, u) for u in urls)))

        await self.wait("no background work", quiet, within)

    # -- acting as Slack -----------------------------------------------------------------
    def slash(self, i: int) -> str:
        n = self.sent + i
        channel = f"C_BENCH{n % CHANNELS:02d}"
        return slash_body(f"ops deploy v{n} to staging", channel, self.response_url)

    async def start_runs(
        self, count: int, concurrency: int, limit: float, warmup: int = 0
    ) -> LoadResult:
        """Slash commands, then wait until every new run shows its card."""
        before = len(await self.cards())
        result = await drive(self.events_url, self.slash, count, concurrency, limit, warmup)
        self.sent += count
        expected = before + result.answered

        async def shown() -> bool:
            return len(await self.cards()) >= expected

        await self.wait(f"{expected} cards", shown, max(60.0, count / 5))
        await self.idle()
        return result

    async def approve(
        self, cards: list[Card], concurrency: int, limit: float, warmup: int = 0
    ) -> tuple[LoadResult, list[float], float]:
        """Click Approve on each card; wait for each tool body. Returns the clicks, the
        click-to-side-effect latencies and the time the last tool body started."""

        def body(i: int) -> str:
            c = cards[i]
            return approve_body(c.request_id, c.channel_id, c.message_ts, self.response_url)

        result = await drive(self.events_url, body, len(cards), concurrency, limit, warmup)
        clicked = [cards[i] for i in result.sent_at]

        async def all_ran() -> bool:
            return all(c.key in self.effects.started for c in clicked)

        await self.wait("every approved tool ran", all_ran, max(60.0, len(cards) / 5))
        latencies = [self.effects.started[cards[i].key] - t for i, t in result.sent_at.items()]
        last = max(self.effects.started[c.key] for c in clicked)
        return result, latencies, last


def _ms(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {
        "p50_ms": round(percentile(ms, 50), 2),
        "p99_ms": round(percentile(ms, 99), 2),
        "max_ms": round(max(ms), 2) if ms else float("nan"),
    }


async def ack_levels(bot: BotUnderTest, floor_url: str, config: dict[str, Any]) -> dict[str, Any]:
    """Per concurrency: slash commands and Approve clicks on the floor and on the bot.

    Each level first sends `concurrency` uncounted requests (connections open, pools fill)."""
    out: dict[str, Any] = {}
    limit = config["time_limit"]
    # warm both apps (imports, first auth.test, connection pools)
    await drive(floor_url, bot.slash, 5, 1, limit)
    await bot.start_runs(5, 1, limit)
    await bot.approve(await bot.cards(), 1, limit)
    await bot.idle()
    out["isolated"] = await isolated_clicks(bot, config["isolated_clicks"], limit)
    print(f"isolated clicks: {out['isolated']}", flush=True)
    for concurrency, count in config["levels"].items():
        total = count + concurrency
        floor_slash = await drive(floor_url, bot.slash, total, concurrency, limit, concurrency)
        bot_slash = await bot.start_runs(total, concurrency, limit, concurrency)
        cards = (await bot.cards())[:total]

        def fake_click(i: int) -> str:
            return approve_body(f"r{i}", "C_BENCH00", "1.000001", bot.response_url)

        n, c = len(cards), concurrency
        floor_click = await drive(floor_url, fake_click, n, c, limit, c)
        bot_click, side, _ = await bot.approve(cards, concurrency, limit, concurrency)
        await bot.idle()
        level = {
            "slash": {"bot": bot_slash.summary(), "floor": floor_slash.summary()},
            "approve": {"bot": bot_click.summary(), "floor": floor_click.summary()},
            "click_to_side_effect": _ms(side),
        }
        for kind in ("slash", "approve"):
            b, f = level[kind]["bot"], level[kind]["floor"]
            level[kind]["p99_ratio"] = round(b["p99_ms"] / f["p99_ms"], 2)
            level[kind]["p50_ratio"] = round(b["p50_ms"] / f["p50_ms"], 2)
        out[str(concurrency)] = level
        print(f"ack c={concurrency}: {level}", flush=True)
    return out


async def decisions(bot: BotUnderTest, config: dict[str, Any]) -> dict[str, Any]:
    """Sustained decisions: K pending cards, K Approve clicks at concurrency 50."""
    count, limit = config["decisions"], config["time_limit"] * 2
    # Cards are prepared in batches: 1,000 runs started within a second exhaust the
    # PostgreSQL pool (see docs/benchmarks.md); the setup is not what is measured here.
    for batch in range(0, count, 200):
        await bot.start_runs(min(200, count - batch), 20, limit)
    cards = (await bot.cards())[:count]
    done_before = await bot.count_runs("completed")
    cpu_before = bot.cpu_seconds()
    calls_before = await bot.slack_calls()
    clicks, side, last_tool = await bot.approve(cards, 50, limit)
    first_click = min(clicks.sent_at.values())

    async def completed() -> bool:
        return await bot.count_runs("completed") >= done_before + len(cards)

    await bot.wait("every approved run completed", completed, 120.0)
    finished = time.time()
    await bot.idle()
    cpu_after = bot.cpu_seconds()
    calls = await bot.slack_calls()
    slack_calls = {
        m: round((n - calls_before.get(m, 0)) / len(cards), 2)
        for m, n in sorted(calls.items())
        if n > calls_before.get(m, 0)
    }
    per_process = {name: cpu_after[name] - cpu_before[name] for name in cpu_before}
    cpu = sum(per_process.values())
    out = {
        "decisions": len(cards),
        "concurrency": 50,
        "decisions_per_s": round(len(cards) / (last_tool - first_click), 1),
        "completed_runs_per_s": round(len(cards) / (finished - first_click), 1),
        "ack": clicks.summary(),
        "click_to_side_effect": _ms(side),
        "bot_cpu_ms_per_decision": round(cpu / len(cards) * 1000, 1),
        "cpu_ms_per_decision_by_process": {
            name: round(seconds / len(cards) * 1000, 1) for name, seconds in per_process.items()
        },
        "processes": len(per_process),
        "slack_calls_per_decision": slack_calls,
    }
    print(f"decisions {bot.proc.name}: {out}", flush=True)
    return out


async def exercise(bot: BotUnderTest, count: int, limit: float) -> None:
    await bot.start_runs(count, 10, limit)
    await bot.approve((await bot.cards())[-count:], 10, limit)
    await bot.idle()


async def memory(bot: BotUnderTest, config: dict[str, Any]) -> dict[str, Any]:
    """RSS after the same exercise with 0 and with N paused runs in the database."""
    warm, limit, paused = config["warm"], config["time_limit"], config["paused_runs"]
    await bot.start_runs(1, 1, limit)  # one paused run stays, the template for the clones
    template = (await bot.cards())[0]
    await exercise(bot, warm, limit)
    first = (await bot.rss())["rss_kb"]
    await exercise(bot, warm, limit)
    before = (await bot.rss())["rss_kb"]
    started = time.perf_counter()
    await clone_paused_runs(bot.database_url, template.run_id, paused)
    inserted_s = time.perf_counter() - started
    await exercise(bot, warm, limit)
    after = (await bot.rss())["rss_kb"]
    out = {
        "paused_runs": paused,
        "rss_after_first_warmup_mb": round(first / 1024, 1),
        "rss_0_paused_mb": round(before / 1024, 1),
        "rss_with_paused_mb": round(after / 1024, 1),
        "growth_mb": round((after - before) / 1024, 1),
        "bulk_insert_s": round(inserted_s, 2),
        "waiting_runs_in_db": await bot.count_runs("waiting_for_human"),
    }
    print(f"memory: {out}", flush=True)
    return out


async def inbox(database_url: str, config: dict[str, Any], pending_share: float) -> dict[str, Any]:
    """store.requests.pending_for timed on a database of N approval requests."""
    count = config["inbox_requests"]
    started = time.perf_counter()
    await seed_requests(database_url, count, pending_share)
    seeded = time.perf_counter() - started
    store = Store(database_url)
    timings: list[float] = []
    totals = set()
    try:
        for i in range(220):
            user = f"U_PERSON{i % 20:02d}"
            t0 = time.perf_counter()
            _, total = await store.requests.pending_for(
                user, ["S_APPROVERS"], include_anyone=True, limit=20
            )
            if i >= 20:  # the first ones warm the pool and the statement cache
                timings.append(time.perf_counter() - t0)
            totals.add(total)
    finally:
        await store.close()
    out = {
        "requests": count,
        "pending_share": pending_share,
        "visible_total": max(totals),
        "seed_s": round(seeded, 1),
        **_ms(timings),
        "mean_ms": round(sum(timings) / len(timings) * 1000, 2),
    }
    print(f"inbox {database_url.split(':')[0]} pending={pending_share}: {out}", flush=True)
    return out


async def isolated_clicks(bot: BotUnderTest, count: int, limit: float) -> dict[str, Any]:
    """Click-to-side-effect with no backlog: one click at a time, each after the bot is idle."""
    await bot.start_runs(count, 5, limit)
    side: list[float] = []
    for card in (await bot.cards())[:count]:
        _, latencies, _ = await bot.approve([card], 1, limit)
        side += latencies
        await bot.idle()
    return {"clicks": len(side), **_ms(side)}
