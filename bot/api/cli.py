"""`sayso keys ...` (API keys in the database) and `sayso request ...` (a script or CI job
asking for approval, with exit codes a pipeline can gate on)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any, NoReturn

from bot.config import Settings

EXIT_APPROVED, EXIT_REJECTED, EXIT_EXPIRED, EXIT_ERROR = 0, 1, 2, 3
CHANNEL = re.compile(r"[CGD][A-Z0-9_]+")


def signing_key_command() -> int:
    """`sayso keys signing-key`: a new Ed25519 key for SAYSO_SIGNING_KEY, and its public half."""
    from bot.receipts import ReceiptSigner, new_signing_key

    key = new_signing_key()
    print(f"SAYSO_SIGNING_KEY={key}")
    print(f"public key:        {ReceiptSigner.from_text(key).public_key}")
    print("Set SAYSO_SIGNING_KEY on every sayso replica (the same key on all); receipt checkers")
    print("take the public key from GET /v1/receipts/public-key.")
    return 0


async def keys_command(args: argparse.Namespace, settings: Settings) -> int:
    if args.keys_command == "signing-key":
        return signing_key_command()
    from store import Store

    store = Store(settings.database_url, encryption_keys=settings.encryption_keys())
    try:
        await store.upgrade()
        if args.keys_command == "create":
            return await _create_key(store, args, settings)
        if args.keys_command == "revoke":
            if await store.api.revoke_key(args.name):
                print(f"key {args.name} revoked")
                return 0
            print(f"sayso: no live key named {args.name!r}", file=sys.stderr)
            return 1
        for key in await store.api.list_keys():
            state = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "live"
            allowed = ",".join(key.channels) or "SAYSO_DEFAULT_CHANNEL only"
            print(
                f"{key.name}\t{state}\t{allowed}\t{key_policy_text(key)}\t"
                f"created {key.created_at:%Y-%m-%d %H:%M}"
            )
        return 0
    finally:
        await store.close()


def _ids(text: str | None) -> list[str]:
    return [c.strip() for c in (text or "").split(",") if c.strip()]


async def _create_key(store: Any, args: argparse.Namespace, settings: Settings) -> int:
    """`sayso keys create NAME [--channels ...] [--approvers ...] [--min-approvals N]
    [--no-self-approval] [--expires-in 24h] [--per-minute N]`."""
    from bot.agent.util import parse_duration
    from bot.service.api_requests import api_key_name_ok, new_key_secrets
    from bot.service.policy.file import PRINCIPAL

    if not api_key_name_ok(args.name):
        return _usage("a key name is letters, digits, - _ . (up to 100)")
    channels, approvers = _ids(args.channels), _ids(args.approvers)
    wrong = [c for c in channels if not CHANNEL.fullmatch(c)]
    if wrong:
        return _usage(f"--channels: {wrong[0]!r} is not a Slack channel id (C…, G…, D…)")
    wrong = [a for a in approvers if not PRINCIPAL.fullmatch(a)]
    if wrong:
        return _usage(f"--approvers: {wrong[0]!r} is not a Slack user (U…, W…) or group (S…) id")
    if args.min_approvals is not None and args.min_approvals < 1:
        return _usage("--min-approvals: at least 1")
    people = [a for a in approvers if not a.startswith("S")]
    if (
        args.min_approvals
        and approvers
        and people == approvers
        and args.min_approvals > len(set(people))
    ):
        return _usage(f"--min-approvals: {args.min_approvals}, but only {len(people)} approvers")
    expires_in = None
    if args.expires_in is not None:
        try:
            expires_in = max(1, int(parse_duration(args.expires_in).total_seconds()))
        except ValueError as exc:
            return _usage(f"--expires-in: {exc}")
    token, secret = new_key_secrets()
    created = await store.api.create_key(
        args.name,
        token,
        secret,
        channels,
        approvers=approvers or None,
        min_approvals=args.min_approvals,
        allow_self_approval=False if args.no_self_approval else None,
        expires_in=expires_in,
    )
    if not created:
        print(f"sayso: a key named {args.name!r} already exists", file=sys.stderr)
        return 1
    if args.per_minute is not None:
        await store.api.set_key_quota(args.name, max(1, args.per_minute))
    print(f"key:            {token}")
    print(f"webhook secret: {secret}")
    print("Both are shown this once: store them now (sayso keeps only a hash of the key).")
    if not channels:
        where = settings.sayso_default_channel or "nowhere: SAYSO_DEFAULT_CHANNEL is not set"
        print(f"No --channels: the key may post only in SAYSO_DEFAULT_CHANNEL ({where}).")
    return 0


def key_policy_text(key: Any) -> str:
    """A key's own policy in one line (`keys list`)."""
    policy = key.policy
    parts = [f"approvers {','.join(policy.approvers)}" if policy.approvers else "any approver"]
    if policy.min_approvals:
        parts.append(f"min {policy.min_approvals}")
    if policy.allow_self_approval is False:
        parts.append("no self-approval")
    if policy.expires_in:
        parts.append(f"expires in {policy.expires_in}s")
    return ", ".join(parts)


def _usage(message: str) -> int:
    print(f"sayso: {message}", file=sys.stderr)
    return 2


def add_keys_parser(sub: Any) -> None:
    keys = sub.add_parser("keys", help="API keys for the approval API")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="a new key; prints it and its webhook secret")
    create.add_argument("name")
    create.add_argument(
        "--channels",
        help="comma-separated channel ids the key may post in (none: SAYSO_DEFAULT_CHANNEL only)",
    )
    create.add_argument(
        "--approvers",
        help="comma-separated user (U…) or group (S…) ids who may decide the key's requests; "
        "callers may name a subset, never others",
    )
    create.add_argument(
        "--min-approvals",
        type=int,
        help="approvals each request needs at least (callers may ask more)",
    )
    create.add_argument(
        "--no-self-approval",
        action="store_true",
        help="the person a request names as requested_by may not approve it",
    )
    create.add_argument(
        "--expires-in",
        help="the default and longest expiry of the key's requests (90s, 30m, 24h, 7d)",
    )
    create.add_argument(
        "--per-minute", type=int, help="requests per minute the key may make (default 60)"
    )
    keys_sub.add_parser("list", help="every key (never the key itself)")
    revoke = keys_sub.add_parser("revoke", help="refuse the key from now on")
    revoke.add_argument("name")
    keys_sub.add_parser(
        "signing-key", help="a new Ed25519 key for SAYSO_SIGNING_KEY (signs receipts); prints it"
    )


class _UsageParser(argparse.ArgumentParser):
    """Usage errors exit 3, like API errors: 0-2 are decisions a pipeline branches on."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"sayso request: {message}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)


def add_request_parser(sub: Any) -> None:
    r = sub.add_parser(
        "request",
        help=(
            "ask for approval over the API and exit 0 approved, 1 rejected, "
            "2 expired or cancelled, 3 error"
        ),
    )
    r.__class__ = _UsageParser
    r.add_argument("--url", help="the sayso to ask (default: SAYSO_URL)")
    r.add_argument("--key", help="the API key (default: SAYSO_KEY)")
    r.add_argument("--channel")
    r.add_argument("--title", required=True)
    r.add_argument("--tool")
    r.add_argument("--arguments", help="a JSON object")
    r.add_argument("--approvers", help="comma-separated Slack user or group ids")
    r.add_argument("--wait", type=float, default=3600, help="seconds to wait (default 3600)")


def _fail(message: str) -> int:
    print(f"sayso request: {message}", file=sys.stderr)
    return EXIT_ERROR


async def request_command(args: argparse.Namespace, settings: Settings) -> int:
    from bot.client import ApprovalExpired, ApprovalRejected, AsyncSaysoClient, SaysoAPIError

    url = args.url or settings.sayso_url
    key = args.key or settings.secret("sayso_key")
    if not url or not key:
        return _fail("--url and --key (or SAYSO_URL and SAYSO_KEY) are required")
    try:
        arguments = json.loads(args.arguments) if args.arguments else {}
    except ValueError as exc:
        return _fail(f"--arguments is not JSON ({exc})")
    if not isinstance(arguments, dict):
        return _fail("--arguments must be a JSON object")
    approvers = [a.strip() for a in (args.approvers or "").split(",") if a.strip()] or None
    client = AsyncSaysoClient(url, key)
    try:
        created = await client.create(
            kind="approval",
            title=args.title,
            tool=args.tool,
            arguments=arguments,
            channel=args.channel,
            approvers=approvers,
        )
        state = await client.wait(created.id, args.wait)
    except SaysoAPIError as exc:
        return _fail(f"{exc.code}: {exc.message}")
    except Exception as exc:  # the connection, mostly: say so, and exit 3
        return _fail(f"cannot reach {url} ({type(exc).__name__}: {exc})")
    print(json.dumps(state.model_dump(mode="json"), indent=2))
    from bot.client import outcome

    try:
        outcome(state)
    except ApprovalRejected:
        return EXIT_REJECTED
    except ApprovalExpired:
        return EXIT_EXPIRED
    return EXIT_APPROVED


def exit_with(code: int) -> None:
    if code:
        raise SystemExit(code)


async def run_keys(args: argparse.Namespace, settings: Settings) -> None:
    exit_with(await keys_command(args, settings))


async def run_request(args: argparse.Namespace, settings: Settings) -> None:
    exit_with(await request_command(args, settings))
