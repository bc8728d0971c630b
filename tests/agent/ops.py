"""The `ops` tools of the runtime tests (one of each kind) and a ledger of their bodies' runs."""

from __future__ import annotations

from typing import Any, Literal

from bot import RunResult, Tool, tool

STAGING = {"environment": "staging", "version": "v2"}
PROD = {"environment": "production", "version": "v2"}


def pending_ids(result: RunResult) -> list[str]:
    """The ids of the calls a paused run waits on, in order."""
    return [p.call.id for p in result.pending_tool_calls]


class Ledger:
    """Counts how many times each tool body ran, with the arguments it got."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def add(self, name: str, **kwargs: Any) -> None:
        self.calls.append((name, kwargs))

    def count(self, name: str) -> int:
        return sum(1 for n, _ in self.calls if n == name)

    def args(self, name: str) -> list[dict[str, Any]]:
        return [a for n, a in self.calls if n == name]


class OpsTools:
    """The four tool kinds of the issue, recording every body run in a ledger."""

    def __init__(self, ledger: Ledger) -> None:
        @tool(require_approval=True)
        async def deploy(environment: Literal["staging", "production"], version: str) -> dict:
            """Deploy a version of the service to an environment."""
            ledger.add("deploy", environment=environment, version=version)
            return {"deployed": version, "environment": environment}

        @tool
        def get_status(service: str) -> dict:
            """Current status of a service."""
            ledger.add("get_status", service=service)
            return {"service": service, "healthy": True}

        @tool(kind="hitl")
        def ask_user(question: str) -> str:
            """Ask the requester a question."""
            raise AssertionError("a hitl body never runs")

        @tool(kind="manual")
        def ticket_lookup(ticket_id: str) -> dict:
            """Look a ticket up (answered by the support team)."""
            raise AssertionError("a manual body never runs")

        self.deploy, self.get_status, self.ask_user, self.ticket_lookup = (
            deploy,
            get_status,
            ask_user,
            ticket_lookup,
        )

    @property
    def all(self) -> list[Tool]:
        return [self.deploy, self.get_status, self.ask_user, self.ticket_lookup]
