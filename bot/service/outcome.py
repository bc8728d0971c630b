"""Who acts, and what came of it: the answer every use-case gives the front ends."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from store import ApprovalRequestRecord, RunRecord

OutcomeKind = Literal[
    "decided",
    "retried",
    "started",
    "cancelled",
    "shown",
    "ignored",
    "denied",
    "lost",
    "expired",
    "not_found",
    "invalid",
]
"""decided / retried / started / cancelled / shown: done (a decision, a retry, a follow-up run, a
cancelled run, what this person may see). ignored: nothing
to do (a thread reply sayso does not answer). denied: not this person. lost: someone else was
first (or holds the run). expired: too late. not_found: no such request or run. invalid: bad
input, or not now (the message says why)."""

DONE: Final[frozenset[OutcomeKind]] = frozenset(
    {"decided", "retried", "started", "cancelled", "shown"}
)


@dataclass(frozen=True)
class Actor:
    """The person acting, as the front end identified them."""

    user_id: str
    team_id: str | None = None


@dataclass(frozen=True)
class Outcome:
    """The result of a use-case: `ok`, or a message for the person (and field errors)."""

    kind: OutcomeKind
    message: str = ""
    request: ApprovalRequestRecord | None = None
    errors: dict[str, str] = field(default_factory=dict)
    run: RunRecord | None = None

    @property
    def ok(self) -> bool:
        return self.kind in DONE

    @property
    def agent_id(self) -> str | None:
        return self.run.agent_id if self.run else None


IGNORED: Final = Outcome("ignored")
