"""Finding 12: a LangGraph thread read back from saved state cannot run code: checkpoints are
decoded by the strict deserializer with an explicit allowlist of modules."""

from __future__ import annotations

import base64
import pickle
from pathlib import Path

import ormsgpack
import pytest

from bot.adapters.langgraph_threads import export_thread, import_thread, new_thread

EXT_CONSTRUCTOR_SINGLE_ARG = 0


def _crafted(kind: str, data: bytes) -> dict[str, object]:
    encoded = [kind, base64.b64encode(data).decode()]
    checkpoint = {"ns": "", "checkpoint": encoded, "metadata": encoded, "writes": []}
    return {"thread_id": "t1", "checkpoints": [checkpoint]}


class _Boom:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return (os.system, (f"touch {self.path}",))


def test_a_crafted_checkpoint_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = ormsgpack.packb(("os", "system", f"touch {marker}"))
    crafted = ormsgpack.packb(ormsgpack.Ext(EXT_CONSTRUCTOR_SINGLE_ARG, payload))
    with pytest.raises(Exception):  # noqa: B017 - whatever the refusal, nothing ran
        import_thread(_crafted("msgpack", crafted))
    with pytest.raises(Exception):  # noqa: B017
        import_thread(_crafted("pickle", pickle.dumps(_Boom(marker))))
    assert not marker.exists()


def test_an_ordinary_thread_still_round_trips() -> None:
    saver, config = new_thread()
    saved = export_thread(saver, config)
    again, config2 = import_thread(saved)
    assert config2["configurable"]["thread_id"] == config["configurable"]["thread_id"]
    assert again is not None
