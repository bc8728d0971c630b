"""`sayso keys ...` (API keys in the database) and `sayso request ...` (a script or CI job
asking for approval, with exit codes a pipeline can gate on)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

from bot.config import Settings

EXIT_APPROVED, EXIT_REJECTED, EXIT_EXPIRED, EXIT_ERROR = 0, 1, 2, 3


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
    from bot.service.api_requests import api_key_name_ok, new_key_secrets
    from store import Store
    from store import api as api_ops

    store = Store(settings.database_url, encryption_keys=settings.encryption_keys())
    try:
        await store.upgrade()
        if args.keys_command == "create":
            if not api_key_name_ok(args.name):
                print("sayso: a key name is letters, digits, - _ . (up to 100)", file=sys.stderr)
                return 2
            channels = [c.strip() for c in (args.channels or "").split(",") if c.strip()]
            token, secret = new_key_secrets()
            if not await api_ops.create_key(store.db, args.name, token, secret, channels):
                print(f"sayso: a key named {args.name!r} already exists", file=sys.stderr)
                return 1
            print(f"key:            {token}")
            print(f"webhook secret: {secret}")
            print("Both are shown this once: store them now (sayso keeps only a hash of the key).")
            return 0
        if args.keys_command == "revoke":
            if await api_ops.revoke_key(store.db, args.name):
                print(f"key {args.name} revoked")
                return 0
            print(f"sayso: no live key named {args.name!r}", file=sys.stderr)
            return 1
        for key in await api_ops.list_keys(store.db):
            state = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "live"
            allowed = ",".join(key.channels) or "any channel"
            print(f"{key.name}\t{state}\t{allowed}\tcreated {key.created_at:%Y-%m-%d %H:%M}")
        return 0
    finally:
        await store.close()


def add_keys_parser(sub: Any) -> None:
    keys = sub.add_parser("keys", help="API keys for the approval API")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="a new key; prints it and its webhook secret")
    create.add_argument("name")
    create.add_argument("--channels", help="comma-separated channel ids the key may post in")
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
