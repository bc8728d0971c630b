"""Group commit for the intake: the records (and the closings) that arrive while one
transaction is in flight share the next one.

Alone, a click costs one transaction before its ack, as before. Under a burst, 50 clicks
waiting on the database become one or two transactions instead of 50 (one commit, one
round of the pool, one turn of SQLite's single writer), which is what keeps the ack within
reach of the bare Bolt floor (bench/intake_ack.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Final, Generic, TypeVar

from store.intake import Intake

T = TypeVar("T")
R = TypeVar("R")

MAX_BATCH: Final = 200


class GroupCommit(Generic[T, R]):
    """Submit items one by one; `flush` writes every item waiting, one batch at a time."""

    def __init__(self, flush: Callable[[list[T]], Awaitable[list[R]]]) -> None:
        self.flush = flush
        self._waiting: list[tuple[T, asyncio.Future[R]]] = []
        self._task: asyncio.Task[None] | None = None

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future))
        if self._task is None:
            self._task = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self._waiting:
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


class IntakeWriter:
    """The intake's writes from the Bolt app, group-committed: `record` before an ack (True
    when the interaction is new), `done` once its listener ran."""

    def __init__(self, intake: Intake, owner: str, lease: float) -> None:
        self.intake = intake
        self.owner = owner
        self.lease = lease
        self._records: GroupCommit[tuple[str, str, dict[str, Any]], bool] = GroupCommit(
            self._record
        )
        self._dones: GroupCommit[tuple[str, Any], None] = GroupCommit(self._done)

    async def record(self, key: str, kind: str, payload: dict[str, Any]) -> bool:
        return await self._records.submit((key, kind, payload))

    async def done(self, key: str, result: Any) -> None:
        await self._dones.submit((key, result))

    async def _record(self, batch: list[tuple[str, str, dict[str, Any]]]) -> list[bool]:
        first: dict[str, int] = {}
        for i, (key, _, _) in enumerate(batch):
            first.setdefault(key, i)  # the same key twice in a batch: the first is the new one
        unique = [batch[i] for i in first.values()]
        new = await self.intake.record_many(unique, owner=self.owner, lease=self.lease)
        return [key in new and first[key] == i for i, (key, _, _) in enumerate(batch)]

    async def _done(self, batch: list[tuple[str, Any]]) -> list[None]:
        await self.intake.done_many(batch)
        return [None] * len(batch)
