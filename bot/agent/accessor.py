"""Where runs are kept between a pause and its continuation."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from bot.agent.state import RunResult


@runtime_checkable
class AgentStateAccessor(Protocol):
    """Load and save runs. The runtime saves after every step when a run is given one."""

    async def load(self, run_id: str) -> RunResult | None: ...

    async def save(self, result: RunResult) -> None: ...


class InMemoryStateAccessor:
    """Keeps runs as JSON in a dict: for tests and examples (nothing survives the process)."""

    def __init__(self) -> None:
        self._runs: dict[str, str] = {}

    async def load(self, run_id: str) -> RunResult | None:
        raw = self._runs.get(run_id)
        return RunResult.model_validate_json(raw) if raw is not None else None

    async def save(self, result: RunResult) -> None:
        self._runs[result.run.id] = result.model_dump_json()

    def __len__(self) -> int:
        return len(self._runs)
