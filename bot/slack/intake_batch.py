"""Group commit for the intake: the records (and the closings) that arrive while one
transaction is in flight share the next one.

Alone, a click costs one transaction before its ack, as before. Under a burst, 50 clicks
waiting on the database become one or two transactions instead of 50 (one commit, one
round of the pool, one turn of SQLite's single writer), which is what keeps the ack within
reach of the bare Bolt floor (bench/intake_ack.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Final, Generic, TypeVar

from store.intake import Intake

T = TypeVar("T")
R = TypeVar("R")

MAX_BATCH: Final = 200


CLOSE_LINGER: Final = 0.25
"""Seconds a closing waits for others to share its transaction. Nobody waits for a closing
(the ack went long before) and a row is replayed only once its lease lapses (30 s by
default), so closings of clicks a few hundred ms apart share one write instead of one each:
at 50 decisions at once, 0.9 transactions per decision were closings alone."""


class GroupCommit(Generic[T, R]):
    """Submit items one by one; `flush` writes every item waiting, one batch at a time. With
    `linger`, a batch first waits that long for more items (unless `settle` was called)."""

    def __init__(self, flush: Callable[[list[T]], Awaitable[list[R]]], linger: float = 0.0) -> None:
        self.flush = flush
        self.linger = linger
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._task: asyncio.Task[None] | None = None
        self._settle = asyncio.Event()

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._task is None:
            self._task = asyncio.create_task(self._drain())
        return await future

    async def settle(self) -> None:
        """Write what waits now, without lingering from now on (a stopping process)."""
        self._settle.set()
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _drain(self) -> None:
        try:
            while self._waiting:
                if self.linger and not self._settle.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._settle.wait(), self.linger)
                batch = self._waiting[:MAX_BATCH]
                del self._waiting[:MAX_BATCH]
                try:
                    results = await self.flush([item for item, _ in batch])
                except Exception as exc:
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
        finally:
            self._task = None


Op = tuple[str, str, Any]
"""("record", key, (kind, payload)) or ("done", key, result)."""


class IntakeWriter:
    """The intake's writes from the Bolt app, group-committed: `record` before an ack (True
    when the interaction is new), `done` once its listener ran. Records waiting together
    share one transaction, and closings within `CLOSE_LINGER` of each other another: an ack
    never waits for closings."""

    def __init__(self, intake: Intake, owner: str, lease: float) -> None:
        self.intake = intake
        self.owner = owner
        self.lease = lease
        self._ops: GroupCommit[Op, bool] = GroupCommit(self._write)
        self._closings: GroupCommit[Op, bool] = GroupCommit(self._write, linger=CLOSE_LINGER)

    async def record(self, key: str, kind: str, payload: dict[str, Any]) -> bool:
        return await self._ops.submit(("record", key, (kind, payload)))

    async def done(self, key: str, result: Any) -> None:
        await self._closings.submit(("done", key, result))

    async def settle(self) -> None:
        """Close now the rows whose closings linger (the process stops)."""
        await self._closings.settle()

    async def _write(self, batch: list[Op]) -> list[bool]:
        first: dict[str, int] = {}
        records: list[tuple[str, str, dict[str, Any]]] = []
        closings: list[tuple[str, Any]] = []
        for i, (op, key, value) in enumerate(batch):
            if op == "done":
                closings.append((key, value))
            elif key not in first:  # the same key twice in a batch: the first is the new one
                first[key] = i
                records.append((key, *value))
        new = await self.intake.write_batch(records, closings, owner=self.owner, lease=self.lease)
        return [
            op == "record" and key in new and first[key] == i
            for i, (op, key, _) in enumerate(batch)
        ]
