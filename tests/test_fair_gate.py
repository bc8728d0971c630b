"""The fair turns after an ack (issue 22, fair intake): a burst from one person or one channel
delays someone else by one turn, never by the burst; cancelled waiters give their turn on."""

from __future__ import annotations

import asyncio

import pytest

from bot.service.fair import FairGate


async def _run(gate: FairGate, order: list[str], channel: str, person: str, tag: str) -> None:
    async with gate.turn(channel, person):
        order.append(tag)
        await asyncio.sleep(0)


async def test_one_persons_burst_delays_another_by_one_turn() -> None:
    gate = FairGate(1)
    order: list[str] = []
    burst = [asyncio.create_task(_run(gate, order, "C1", "U_A", f"a{i}")) for i in range(100)]
    await asyncio.sleep(0)  # the burst is waiting
    other = asyncio.create_task(_run(gate, order, "C1", "U_B", "b"))
    await asyncio.gather(*burst, other)
    assert order.index("b") <= 3  # a0 and a1 had their turns already, a2 was first in line
    assert [t for t in order if t.startswith("a")] == [f"a{i}" for i in range(100)]  # FIFO


async def test_one_channels_burst_delays_another_channel_by_one_turn() -> None:
    gate = FairGate(2)
    order: list[str] = []
    burst = [
        asyncio.create_task(_run(gate, order, "C_BUSY", f"U{i % 20}", f"x{i}")) for i in range(200)
    ]
    await asyncio.sleep(0)
    other = asyncio.create_task(_run(gate, order, "C_QUIET", "U_Q", "q"))
    await asyncio.gather(*burst, other)
    assert order.index("q") <= 5  # two slots: the ones under way, then one busy turn


async def test_a_cancelled_waiter_gives_its_turn_on() -> None:
    gate = FairGate(1)
    order: list[str] = []
    release = asyncio.Event()

    async def hold() -> None:
        async with gate.turn("C", "U_H"):
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    cancelled = asyncio.create_task(_run(gate, order, "C", "U_X", "x"))
    waiting = asyncio.create_task(_run(gate, order, "C", "U_Y", "y"))
    await asyncio.sleep(0)
    cancelled.cancel()
    release.set()
    await asyncio.gather(holder, waiting)
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert order == ["y"] and gate.waiting == 0
    async with gate.turn("C", "U_Z"):  # the slot came back
        pass


async def test_a_newcomer_goes_before_the_first_turns_of_a_bursts_people() -> None:
    """Behind 300 commands of 40 people in 50 channels, someone new is next: not after each
    of the 40 has had a first turn (they tie with the newcomer on turns; the newcomer has
    the least waiting)."""
    gate = FairGate(2)
    order: list[str] = []
    go = asyncio.Event()

    async def held(channel: str, person: str, tag: str) -> None:
        async with gate.turn(channel, person):
            order.append(tag)
            await go.wait()

    burst = [asyncio.create_task(held(f"C{i % 50}", f"U{i % 40}", f"b{i}")) for i in range(300)]
    newcomer = asyncio.create_task(held("C_NEW", "U_NEW", "new"))
    while gate.waiting < 299:  # noqa: ASYNC110 (the turns queue on this loop)
        await asyncio.sleep(0)
    go.set()
    await asyncio.gather(*burst, newcomer)
    assert order.index("new") == 2  # right after the two under way


async def test_a_task_in_its_turn_asking_again_goes_on_in_it_and_its_children_do_not() -> None:
    """A click's listener takes a turn after its ack; the decision it records asks again:
    it goes on (one slot, no deadlock). A task it starts is not in its turn: it waits."""
    gate = FairGate(1)
    order: list[str] = []

    async def child() -> None:
        async with gate.turn(None, "U_A"):
            order.append("child")

    async def click() -> None:
        async with gate.turn(None, "U_A"):
            spawned = asyncio.create_task(child())
            async with gate.turn(None, "U_A"):  # the decision's own turn
                order.append("decision")
            await asyncio.sleep(0.01)
            order.append("click done")
        await spawned

    await asyncio.wait_for(click(), timeout=2)
    assert order == ["decision", "click done", "child"]
    async with gate.turn(None, "U_B"):  # every slot is free again
        pass
