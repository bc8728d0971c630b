"""Use-cases, front-end agnostic: start a run, create a request, decide (who may, policy,
exactly once), continue when ready, expire, escalate, recover, cancel. The facade is
`bot.service.service.Service`; front ends see only it and the types re-exported here."""

from __future__ import annotations

from bot.agent.vocabulary import PersonAction
from bot.service.commands import Command
from bot.service.decision_rules import OUTPUT_FIELD, REASON_FIELD
from bot.service.events import (
    PolicyReloaded,
    RequestSettled,
    RunHandedOff,
    RunReady,
    StandingApprovalGiven,
)
from bot.service.inbox import Inbox
from bot.service.outcome import Actor, Outcome
from bot.service.ports import Directory, Person, Presenter
from bot.service.registry import AgentRegistry
from bot.service.service import Service
from bot.service.settings import ServiceSettings

Action = PersonAction
"""Kept for code written against `bot.service.Action`: use `PersonAction`."""

__all__ = [
    "OUTPUT_FIELD",
    "REASON_FIELD",
    "Action",
    "Actor",
    "AgentRegistry",
    "Command",
    "Directory",
    "Inbox",
    "Outcome",
    "Person",
    "PersonAction",
    "PolicyReloaded",
    "Presenter",
    "RequestSettled",
    "RunHandedOff",
    "RunReady",
    "Service",
    "ServiceSettings",
    "StandingApprovalGiven",
]
