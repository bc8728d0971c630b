"""`sayso doctor`: check a live configuration, one line per check with the fix.

Checks: the bot token is valid and has the scopes manifest.yml declares (`auth.test`'s
`x-oauth-scopes`), a signing secret or an app token is set, the database answers and is
migrated to head, the agents load and their models answer, every approver id names a user or a
user group, and the policy file is valid. Exit 0 when all pass, 1 otherwise; `--json` prints
the same as one JSON object.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from bot.config import Settings

BOT_SCOPES: tuple[str, ...] = (
    "app_mentions:read",
    "assistant:write",
    "channels:history",
    "channels:read",
    "chat:write",
    "commands",
    "groups:history",
    "groups:read",
    "im:history",
    "im:write",
    "usergroups:read",
    "users:read",
)
"""The bot scopes manifest.yml declares (a test keeps the two the same)."""

Status = Literal["ok", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = {"ok": "ok  ", "fail": "FAIL", "skip": "skip"}[self.status]
        text = f"{mark} {self.name}: {self.detail}"
        return f"{text} -> fix: {self.fix}" if self.fix and self.status == "fail" else text


def ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, "fail", detail, fix)


def skip(name: str, detail: str) -> Check:
    return Check(name, "skip", detail)


# -- Slack -------------------------------------------------------------------------------------


async def check_token(settings: Settings, client: Any) -> list[Check]:
    """auth.test: the token is valid; its scopes (x-oauth-scopes) cover the manifest's."""
    name = "slack token"
    token = settings.secret("slack_bot_token")
    if not token:
        return [fail(name, "SLACK_BOT_TOKEN is not set", "set it to the Bot User OAuth Token")]
    if not token.startswith("xoxb-"):
        return [fail(name, "SLACK_BOT_TOKEN is not a bot token", "use the xoxb-… token")]
    from slack_sdk.errors import SlackApiError

    try:
        response = await client.auth_test()
    except SlackApiError as exc:
        error = exc.response.get("error") if exc.response is not None else str(exc)
        return [
            fail(
                name,
                f"Slack refused it ({error})",
                "copy the Bot User OAuth Token again from OAuth & Permissions (reinstall the app "
                "if it was revoked)",
            )
        ]
    except Exception as exc:
        return [
            fail(
                name,
                f"Slack did not answer ({type(exc).__name__}: {exc})",
                "check SLACK_API_URL and the network",
            )
        ]
    team = response.get("team") or response.get("team_id")
    checks = [ok(name, f"valid for workspace {team} as {response.get('user')}")]
    header = _header(response.headers, "x-oauth-scopes")
    if header is None:
        checks.append(skip("slack scopes", "auth.test sent no x-oauth-scopes header"))
        return checks
    granted = {s.strip() for s in header.split(",") if s.strip()}
    missing = [s for s in BOT_SCOPES if s not in granted]
    if missing:
        checks.append(
            fail(
                "slack scopes",
                f"missing {', '.join(missing)}",
                "add them under OAuth & Permissions -> Bot Token Scopes (or paste manifest.yml "
                "again) and reinstall the app",
            )
        )
    else:
        checks.append(ok("slack scopes", f"all {len(BOT_SCOPES)} scopes of manifest.yml"))
    return checks


def _header(headers: Any, name: str) -> str | None:
    for key, value in dict(headers or {}).items():
        if key.lower() == name:
            return str(value[0] if isinstance(value, list) else value)
    return None


def check_secrets(settings: Settings) -> Check:
    name = "slack secrets"
    if settings.slack_app_token is not None:
        if not (settings.secret("slack_app_token") or "").startswith("xapp-"):
            return fail(name, "SLACK_APP_TOKEN is not an app-level token", "use the xapp-… token")
        return ok(name, "app-level token set (Socket Mode)")
    if settings.slack_signing_secret is not None:
        return ok(name, "signing secret set (HTTP mode)")
    return fail(
        name,
        "neither SLACK_SIGNING_SECRET nor SLACK_APP_TOKEN is set",
        "set SLACK_SIGNING_SECRET (Basic Information) for HTTP, or SLACK_APP_TOKEN for Socket Mode",
    )


async def check_approvers(settings: Settings, client: Any, agents: Any, policy: Any) -> Check:
    """Every approver and admin id names a user (users.info) or a user group."""
    name = "approvers"
    ids = approver_ids(settings, agents, policy)
    if not ids:
        return ok(name, "none named: any full member of the channel decides")
    from slack_sdk.errors import SlackApiError

    bad: list[str] = []
    groups: set[str] | None = None
    for principal in sorted(ids):
        try:
            if principal.startswith("S"):
                if groups is None:
                    listing = await client.usergroups_list(include_disabled=False)
                    groups = {g["id"] for g in listing.get("usergroups", [])}
                if principal not in groups:
                    bad.append(f"{principal} (no such user group)")
            else:
                await client.users_info(user=principal)
        except SlackApiError as exc:
            error = exc.response.get("error") if exc.response is not None else "error"
            bad.append(f"{principal} ({error})")
    if bad:
        where = "SAYSO_APPROVERS, SAYSO_ADMINS, the agents' approvers or the policy file"
        return fail(name, f"unknown: {', '.join(bad)}", f"correct or remove them in {where}")
    return ok(name, f"{len(ids)} id(s) resolve to users or user groups")


def approver_ids(settings: Settings, agents: Any, policy: Any) -> set[str]:
    ids = set(settings.sayso_approvers) | set(settings.sayso_admins)
    for agent in agents or ():
        ids |= set(agent.approvers)
        for tool in agent.tools.values():
            ids |= set(tool.approvers)
    ids |= set(_ids_in(policy))
    return {i for i in ids if i != "*"}


def _ids_in(obj: Any, depth: int = 0) -> Iterable[str]:
    """Approver and escalation ids anywhere in a loaded policy file."""
    if obj is None or depth > 6:
        return
    if isinstance(obj, dict):
        for value in obj.values():
            yield from _ids_in(value, depth + 1)
    elif isinstance(obj, list | tuple):
        for value in obj:
            yield from _ids_in(value, depth + 1)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.name in ("approvers", "escalate_to"):
                yield from (str(v) for v in value or ())
            else:
                yield from _ids_in(value, depth + 1)


# -- the database ------------------------------------------------------------------------------


async def check_database(settings: Settings) -> list[Check]:
    from store import Store

    store = Store(settings.database_url, encryption_keys=settings.encryption_keys())
    try:
        if not await store.ping():
            return [
                fail(
                    "database",
                    f"{store.dialect} does not answer",
                    "check DATABASE_URL, the server and its credentials",
                )
            ]
        current, head = await store.schema_versions()
    finally:
        await store.close()
    checks = [ok("database", f"{store.dialect} answers")]
    if current == head:
        checks.append(ok("migrations", f"at head ({head})"))
    else:
        checks.append(
            fail(
                "migrations",
                f"at {current or 'nothing'}, head is {head}",
                "run `sayso db upgrade` (sayso run also upgrades at start)",
            )
        )
    return checks


# -- agents, models, policy --------------------------------------------------------------------


def load_agents_check(settings: Settings) -> tuple[Check, Any]:
    from bot.config import ConfigError
    from bot.serve import load_agents

    try:
        agents = load_agents(settings.sayso_agents)
    except (ConfigError, ImportError, AttributeError) as exc:
        return (
            fail(
                "agents",
                f"{settings.sayso_agents} does not load: {exc}",
                "check SAYSO_AGENTS (module:attribute) and that the module is importable",
            ),
            None,
        )
    return ok("agents", f"{', '.join(agents.ids)} from {settings.sayso_agents}"), agents


async def check_models(agents: Any) -> list[Check]:
    """A cheap look at each distinct HTTP model's endpoint (GET …/models): it answers and
    does not refuse the key. Offline and framework models have nothing to reach."""
    from bot.agent.models.provider import HttpModel

    checks: list[Check] = []
    seen: set[str] = set()
    for agent in agents or ():
        try:
            model = agent.model_client
        except Exception as exc:
            checks.append(fail(f"model {agent.model}", str(exc), "fix the agent's model spec"))
            continue
        if not isinstance(model, HttpModel):
            if agent.model not in seen:
                checks.append(ok(f"model {agent.model}", "offline or framework model"))
                seen.add(agent.model)
            continue
        if model.name in seen:
            continue
        seen.add(model.name)
        checks.append(await _reach(model))
    return checks


async def _reach(model: Any) -> Check:
    name = f"model {model.name}"
    url = model.base_url + ("/v1/models" if model.provider == "anthropic" else "/models")
    try:
        async with httpx.AsyncClient(timeout=5.0) as client:
            response = await client.get(url, headers=model._headers)
    except httpx.HTTPError as exc:
        return fail(
            name,
            f"{model.base_url} does not answer ({type(exc).__name__})",
            "check the provider's base URL variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL)",
        )
    if response.status_code in (401, 403):
        return fail(
            name,
            f"{model.base_url} refused the key (HTTP {response.status_code})",
            "check the provider's API key variable (OPENAI_API_KEY, ANTHROPIC_API_KEY)",
        )
    return ok(name, f"{model.base_url} answers")


def check_policy(settings: Settings, agents: Any) -> tuple[Check, Any]:
    if not settings.sayso_policy:
        return ok("policy", "no SAYSO_POLICY file: the code's policy applies"), None
    if agents is None:
        return skip("policy", "not checked: the agents did not load"), None
    from bot.service.policy.file import PolicyError, load_policy

    try:
        policy = load_policy(settings.sayso_policy, agents)
    except (PolicyError, OSError) as exc:
        return (
            fail(
                "policy",
                f"{exc}",
                f"fix {settings.sayso_policy} (`sayso policy check` shows each tool's policy)",
            ),
            None,
        )
    return ok("policy", f"{settings.sayso_policy} is valid"), policy


# -- the command -------------------------------------------------------------------------------


async def run_checks(settings: Settings, client: Any = None) -> list[Check]:
    """Every check, in order (a Slack Web client is made from the settings unless given)."""
    from slack_sdk.web.async_client import AsyncWebClient

    own = client is None
    if client is None:
        client = AsyncWebClient(
            token=settings.secret("slack_bot_token"), base_url=settings.slack_api_url
        )
    try:
        checks = await check_token(settings, client)
        checks.append(check_secrets(settings))
        checks += await check_database(settings)
        agents_check, agents = load_agents_check(settings)
        checks.append(agents_check)
        checks += await check_models(agents)
        policy_check, policy = check_policy(settings, agents)
        checks.append(policy_check)
        if checks[0].status == "ok":
            checks.append(await check_approvers(settings, client, agents, policy))
        else:
            checks.append(skip("approvers", "not checked: the token does not work"))
    finally:
        if own:
            session = getattr(client, "session", None)
            if session is not None:
                await session.close()
    return checks


def report(checks: list[Check], as_json: bool, out: Any = None) -> int:
    out = out or sys.stdout
    passed = all(c.status != "fail" for c in checks)
    if as_json:
        body = {"ok": passed, "checks": [dataclasses.asdict(c) for c in checks]}
        print(json.dumps(body, indent=2), file=out)
    else:
        for check in checks:
            print(check.line(), file=out)
        failed = sum(c.status == "fail" for c in checks)
        print("all checks pass" if passed else f"{failed} check(s) failed", file=out)
    return 0 if passed else 1


async def doctor(settings: Settings, as_json: bool) -> int:
    return report(await run_checks(settings), as_json)
