"""A LangGraph thread as JSON, so a sayso run can keep it in its saved state.

    saver, config = new_thread()
    await graph_on(graph, saver).ainvoke(input, config)
    saved = export_thread(saver, config)          # JSON: into the run's state
    ...                                           # (another process, later)
    saver, config = import_thread(saved)          # the same thread, ready to resume

Only the latest checkpoint of each namespace is kept, with its pending writes (the interrupts,
the results of tasks that finished before them): what resuming needs, not the history.
Checkpoints are encoded by the checkpointer's own serializer, as base64 text, and decoded by
LangGraph's strict deserializer: no pickle, and only the types LangGraph deems safe plus the
explicit ALLOWED_TYPES below are rebuilt; anything else in saved state is refused, never
imported or called (a crafted checkpoint could otherwise run code: issue 21, finding 12).
"""

from __future__ import annotations

import base64
import uuid
from collections import defaultdict
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.pregel import Pregel

ALLOWED_TYPES: tuple[tuple[str, str], ...] = (
    ("langgraph.types", "Interrupt"),
    ("langgraph.types", "Send"),
    ("langgraph.types", "Command"),
)
"""(module, name) pairs a saved thread may hold beyond LangGraph's SAFE_MSGPACK_TYPES
(datetimes, UUIDs, decimals, sets, paths, langchain-core messages and documents)."""


def strict_serializer() -> JsonPlusSerializer:
    return JsonPlusSerializer(
        pickle_fallback=False, allowed_json_modules=None, allowed_msgpack_modules=ALLOWED_TYPES
    )


def _saver() -> InMemorySaver:
    return InMemorySaver(serde=strict_serializer())


def graph_on(graph: Pregel, saver: InMemorySaver) -> Pregel:
    """The graph with `saver` as its checkpointer (the graph itself is left as it is)."""
    return graph.copy(update={"checkpointer": saver})


def new_thread() -> tuple[InMemorySaver, RunnableConfig]:
    """An empty thread: its saver and config."""
    return _saver(), {"configurable": {"thread_id": uuid.uuid4().hex}}


def _encode(saver: InMemorySaver, value: Any) -> list[str]:
    kind, data = saver.serde.dumps_typed(value)
    return [kind, base64.b64encode(data).decode()]


def _decode(saver: InMemorySaver, encoded: list[str]) -> Any:
    kind, data = encoded
    if kind not in ("msgpack", "json", "null", "bytes", "bytearray"):
        raise ValueError(f"a saved LangGraph thread holds a value of kind {kind!r}: refused")
    return saver.serde.loads_typed((kind, base64.b64decode(data)))


def export_thread(saver: InMemorySaver, config: RunnableConfig) -> dict[str, Any]:
    """The thread of `config` as JSON: its id and the latest checkpoint of each namespace."""
    thread_id = config["configurable"]["thread_id"]
    latest: dict[str, dict[str, Any]] = {}
    for saved in saver.list({"configurable": {"thread_id": thread_id}}):
        ns = saved.config["configurable"].get("checkpoint_ns", "")
        if ns in latest:  # newest first within a namespace
            continue
        latest[ns] = {
            "ns": ns,
            "checkpoint": _encode(saver, saved.checkpoint),
            "metadata": _encode(saver, saved.metadata),
            "writes": [
                [task_id, channel, _encode(saver, value)]
                for task_id, channel, value in saved.pending_writes or []
            ],
        }
    return {"thread_id": thread_id, "checkpoints": list(latest.values())}


def import_thread(saved: dict[str, Any]) -> tuple[InMemorySaver, RunnableConfig]:
    """A saver holding the exported thread, and the thread's config."""
    saver = _saver()
    thread_id = str(saved["thread_id"])
    for entry in saved["checkpoints"]:
        checkpoint = _decode(saver, entry["checkpoint"])
        ns = str(entry["ns"])
        at: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        stored = saver.put(
            at, checkpoint, _decode(saver, entry["metadata"]), checkpoint["channel_versions"]
        )
        by_task: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        for task_id, channel, value in entry["writes"]:
            by_task[task_id].append((channel, _decode(saver, value)))
        for task_id, writes in by_task.items():
            saver.put_writes(stored, writes, task_id)
    return saver, {"configurable": {"thread_id": thread_id}}
