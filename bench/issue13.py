"""Issue 13's scenarios: runs driven by workers, off the loop that acknowledges Slack.

Every time is read black-box, on one machine's clock: a request's send time in this load
generator; a message's `ts` in the fake Slack (its clock when the message was posted); a tool
body's start from its UDP datagram. Runs are told apart by their command text, which carries a
tag per scenario (`ops deploy <tag>-<i> to staging`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp
import sqlalchemy as sa
from common import PEOPLE, percentile, slash_body
from load import drive
from scenarios import CHANNELS, BotUnderTest, Card

from store.schema import approval_requests as req
from store.schema import runs

FINISHED = ("completed", "failed", "cancelled")


@dataclass
class TaggedRun:
    run_id: str
    text: str
    status: str
    channel_id: str | None
    thread_ts: str | None
    card: Card | None


def _text(tag: str, i: int) -> str:
    return f"ops deploy {tag}-{i} to staging"


def _command(bot: BotUnderTest, tag: str, i: int) -> str:
    channel = f"C_BENCH{i % CHANNELS:02d}"
    return slash_body(_text(tag, i), channel, bot.response_url, user=PEOPLE[i % len(PEOPLE)])


async def tagged_runs(bot: BotUnderTest, tag: str) -> dict[int, TaggedRun]:
    """The runs a scenario started, by command index (read from the run's request text),
    with their pending card if posted."""
    assert bot.engine is not None
    query = (
        sa.select(
            runs.c.id,
            runs.c.request_text,
            runs.c.status,
            runs.c.channel_id,
            runs.c.thread_ts,
            req.c.id,
            req.c.call_id,
            req.c.channel_id,
            req.c.message_ts,
        )
        .select_from(runs.outerjoin(req, req.c.run_id == runs.c.id))
        .where(runs.c.request_text.like(f"%deploy {tag}-%"))
    )
    out: dict[int, TaggedRun] = {}
    async with bot.engine.connect() as conn:
        for row in (await conn.execute(query)).all():
            run_id, text, status, channel, thread_ts, rid, call_id, card_channel, ts = row
            card = Card(rid, run_id, call_id, card_channel, ts) if rid and ts else None
            index = int(text.split(f"deploy {tag}-", 1)[1].split()[0])
            out[index] = TaggedRun(run_id, text, status, channel, thread_ts, card)
    return out


async def answers(bot: BotUnderTest) -> dict[tuple[str, str], float]:
    """(channel, thread ts) -> when the thread's final answer was posted (fake Slack clock)."""
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{bot.slack_url}/bench/messages") as resp:
            messages = await resp.json()
    out: dict[tuple[str, str], float] = {}
    for m in messages:
        if m["answer"] and m["thread_ts"]:
            key = (m["channel"], m["thread_ts"])
            out[key] = min(out.get(key, float("inf")), float(m["ts"]))
    return out


def _stats(seconds: list[float], latency: float | None = None) -> dict[str, Any]:
    ms = [s * 1000 for s in seconds]
    out: dict[str, Any] = {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 1),
        "max_ms": round(max(ms), 1) if ms else None,
    }
    if latency and ms:
        out["max_x_latency"] = round(max(seconds) / latency, 2)
    return out


async def many_at_once(
    bot: BotUnderTest, tag: str, count: int, concurrency: int, latency: float, limit: float
) -> dict[str, Any]:
    """`count` commands (from forty people, in turn) sent `concurrency` at a time; once every
    card is up, every card approved the same way. Command -> root message, command -> card,
    approval click -> tool body and approval click -> final answer."""
    cpu_before = bot.cpu_seconds()
    started = await drive(
        bot.events_url, lambda i: _command(bot, tag, i), count, concurrency, limit
    )

    async def carded() -> bool:
        found = await tagged_runs(bot, tag)
        return sum(1 for r in found.values() if r.card is not None) >= started.answered

    await bot.wait(f"{count} cards ({tag})", carded, max(60.0, count / 5 + latency * 10))
    found = await tagged_runs(bot, tag)
    sent = started.sent_at
    root = [float(found[x].thread_ts or "nan") - t for x, t in sent.items() if x in found]
    card = [
        float(c.message_ts) - t
        for x, t in sent.items()
        if x in found and (c := found[x].card) is not None
    ]
    await bot.idle()
    cards = [r.card for r in found.values() if r.card is not None]
    clicks, to_tool, _ = await bot.approve(cards, concurrency, limit)
    clicked = {cards[i].run_id: t for i, t in clicks.sent_at.items()}
    threads = {r.run_id: (r.channel_id or "", r.thread_ts or "") for r in found.values()}

    async def answered() -> bool:
        done = await answers(bot)
        return all(threads[run_id] in done for run_id in clicked)

    await bot.wait(f"{len(clicked)} answers ({tag})", answered, max(60.0, count / 5 + latency * 10))
    done = await answers(bot)
    to_answer = [done[threads[run_id]] - t for run_id, t in clicked.items()]
    await bot.idle()
    cpu_after = bot.cpu_seconds()
    cpu = sum(cpu_after[n] - cpu_before[n] for n in cpu_before)
    out = {
        "runs": count,
        "send_concurrency": concurrency,
        "model_latency_s": latency,
        "command_ack": started.summary(),
        "to_root": _stats(root, latency),
        "to_card": _stats(card, latency),
        "approval_to_tool": _stats(to_tool, latency),
        "approval_to_answer": _stats(to_answer, latency),
        "errors": started.errors + clicks.errors,
        "bot_cpu_ms_per_run": round(cpu / count * 1000, 1),
    }
    print(f"{tag} {bot.proc.name}: {out}", flush=True)
    return out


async def _in_flight(bot: BotUnderTest, tag: str) -> int:
    return sum(1 for r in (await tagged_runs(bot, tag)).values() if r.status not in FINISHED)


PROBE_PERSON, PROBE_CHANNEL = "U_MEMBER", "C_PROBE"
PROBE_CHANNELS = 4
"""The probes take turns over this many channels: sent every 0.5 s, one channel would ask for
two messages a second where Slack posts about one (the root would wait for the channel's
pace, which is not what this measures)."""
"""Someone else, elsewhere: a person and a channel the burst does not use (within one channel
Slack's one message a second orders every root message, whoever asked)."""


async def _probe(bot: BotUnderTest, tag: str, i: int, limit: float) -> float:
    """One new command by someone else; returns when it was sent."""
    channel = f"{PROBE_CHANNEL}{i % PROBE_CHANNELS}"
    body = slash_body(_text(tag, i), channel, bot.response_url, user=PROBE_PERSON)
    result = await drive(bot.events_url, lambda _: body, 1, 1, limit)
    return result.sent_at[0]


async def _root_latencies(
    bot: BotUnderTest, tag: str, sent: dict[int, float], within: float
) -> list[float]:
    async def rooted() -> bool:
        found = await tagged_runs(bot, tag)
        return all(i in found and found[i].thread_ts for i in sent)

    await bot.wait(f"root messages ({tag})", rooted, within)
    found = await tagged_runs(bot, tag)
    return [float(found[i].thread_ts or "nan") - t for i, t in sent.items()]


async def backlog(
    bot: BotUnderTest, floor_url: str, tag: str, config: dict[str, Any]
) -> dict[str, Any]:
    """A burst of `burst` commands (the model is slow: they stay in flight), then new commands
    and the time to their root message: right after the burst was acknowledged, and again once
    the burst's own root messages are all up. Then ack latency at 50 concurrent against the
    floor, with those runs still in flight."""
    burst, probes, limit = config["burst"], config["probes"], config["time_limit"]
    body = lambda i: _command(bot, tag, i)  # noqa: E731
    flood = await drive(bot.events_url, body, burst, 50, limit)
    early: dict[int, float] = {}
    for k in range(probes):
        early[k] = await _probe(bot, f"{tag}p", k, limit)
        await asyncio.sleep(0.5)

    async def burst_rooted() -> bool:
        found = await tagged_runs(bot, tag)
        return sum(1 for r in found.values() if r.thread_ts) >= flood.answered

    await bot.wait("the burst's root messages", burst_rooted, 300.0)
    found = await tagged_runs(bot, tag)
    first_sent = min(flood.sent_at.values())
    burst_roots_s = max(float(r.thread_ts or 0) for r in found.values()) - first_sent
    settled: dict[int, float] = {}
    for k in range(probes, 2 * probes):
        settled[k] = await _probe(bot, f"{tag}p", k, limit)
        await asyncio.sleep(0.5)
    early_root = await _root_latencies(bot, f"{tag}p", early, 120.0)
    all_roots = await _root_latencies(bot, f"{tag}p", {**early, **settled}, 120.0)
    settled_root = all_roots[len(early) :]
    in_flight_before = await _in_flight(bot, tag)
    # ack latency at 50 concurrent, floor then bot, while the burst is in flight
    n, c = config["ack_requests"], 50
    floor = await drive(floor_url, body, n + c, c, limit, c)
    acks = await drive(bot.events_url, lambda i: _command(bot, f"{tag}a", i), n + c, c, limit, c)
    in_flight_after = await _in_flight(bot, tag)
    f, b = floor.summary(), acks.summary()
    out = {
        "burst": burst,
        "burst_ack": flood.summary(),
        "burst_roots_posted_after_s": round(burst_roots_s, 1),
        "new_command_to_root_during_burst": _stats(early_root),
        "new_command_to_root_after_burst": _stats(settled_root),
        "burst_runs_in_flight": [in_flight_before, in_flight_after],  # around the ack phase
        "ack_at_50": {
            "bot": b,
            "floor": f,
            "p99_ratio": round(b["p99_ms"] / f["p99_ms"], 2),
            "p50_ratio": round(b["p50_ms"] / f["p50_ms"], 2),
        },
    }
    print(f"backlog {bot.proc.name}: {out}", flush=True)
    return out
