"""`sayso audit verify` and `sayso audit export`: the hash chain checked, the events streamed.

Both read the chain a page at a time (keyset pagination on the event id), so memory stays
flat whatever the number of events; export writes each page before reading the next.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TextIO

from store.audit import HASHED, EventFilter, event_hash
from store.repos import AuditRepository

PAGE = 1000
EXPORT_COLUMNS = ("id", *HASHED, "prev_hash", "hash")
Format = Literal["jsonl", "csv"]


@dataclass(frozen=True)
class Verdict:
    ok: bool
    checked: int
    broken_id: int | None = None
    reason: str = ""

    def line(self) -> str:
        if self.ok:
            return f"audit chain ok: {self.checked} event(s) verified"
        return f"audit chain broken at event {self.broken_id}: {self.reason}"


async def events(
    trail: AuditRepository, where: EventFilter | None = None, after_id: int = 0, page: int = PAGE
) -> AsyncIterator[dict[str, Any]]:
    """Every event after `after_id` matching `where`, in chain order, a page at a time."""
    while True:
        batch = await trail.page(after_id, page, where)
        for event in batch:
            yield event
        if len(batch) < page:
            return
        after_id = batch[-1]["id"]


async def verify(trail: AuditRepository) -> Verdict:
    """Recompute the chain from its anchor: the first event whose link or hash does not match
    is named, and so is a head that no longer matches the last event (events deleted)."""
    ends = await trail.chain_ends()
    prev_id, prev_hash, checked = ends.anchor_id, ends.anchor_hash, 0
    async for event in events(trail, after_id=ends.anchor_id):
        if event["hash"] is None:
            if ends.head_id is not None and event["id"] <= ends.head_id:
                return Verdict(False, checked, event["id"], "its hash was removed")
            break  # written by an older version after the head: the next append chains it
        if event["prev_hash"] != prev_hash:
            return Verdict(
                False,
                checked,
                event["id"],
                f"it does not follow event {prev_id} (an event before it was deleted or edited)",
            )
        if event_hash(prev_hash, event) != event["hash"]:
            return Verdict(
                False, checked, event["id"], "its content was edited after it was written"
            )
        prev_id, prev_hash, checked = event["id"], event["hash"], checked + 1
    if ends.head_id is not None and ends.head_id > ends.anchor_id and prev_id != ends.head_id:
        return Verdict(
            False,
            checked,
            ends.head_id,
            f"the chain ends at event {prev_id} but its head is event {ends.head_id} "
            "(events at the end were deleted)",
        )
    if ends.head_id is not None and prev_id == ends.head_id and prev_hash != ends.head_hash:
        return Verdict(False, checked, prev_id, "it does not match the chain's recorded head")
    return Verdict(True, checked)


def _plain(event: dict[str, Any]) -> dict[str, Any]:
    out = {name: event.get(name) for name in EXPORT_COLUMNS}
    at = out["at"]
    if isinstance(at, datetime):
        out["at"] = at.isoformat(timespec="microseconds")
    return out


async def export(trail: AuditRepository, out: TextIO, fmt: Format, where: EventFilter) -> int:
    """Write the events matching `where` to `out` in chain order (flushed a page at a time);
    a broken chain is exported as it is. Returns how many."""
    count = 0
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, lineterminator="\n")
    if fmt == "csv":
        writer.writeheader()
    async for event in events(trail, where):
        row = _plain(event)
        if fmt == "csv":
            writer.writerow(row)
        else:
            buffer.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")
        count += 1
        if count % PAGE == 0:
            out.write(buffer.getvalue())
            out.flush()
            buffer.seek(0)
            buffer.truncate()
    out.write(buffer.getvalue())
    out.flush()
    return count
