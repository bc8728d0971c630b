"""`sayso proxy [--name N] -- <command ...>` or `sayso proxy --upstream URL`: serve the upstream
MCP server's tools through sayso, over stdio (default) or `--http PORT`."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.config import Settings
    from bot.proxy.gateway import Upstream

log = logging.getLogger("sayso.proxy")


def add_proxy_parser(sub: Any) -> None:
    p = sub.add_parser(
        "proxy",
        help="an MCP gateway: serve an MCP server's tools, asking sayso before gated calls",
        description=(
            "sayso proxy [--name N] -- <upstream command ...>  |  sayso proxy --upstream URL"
        ),
    )
    p.add_argument("--name", help="the server's name in the policy's proxy: section")
    p.add_argument("--upstream", help="a streamable HTTP upstream (https://host/mcp)")
    p.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header sent to --upstream (repeatable), e.g. 'Authorization: Bearer …'",
    )
    p.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on PORT")
    p.add_argument("--host", default="127.0.0.1", help="with --http (default 127.0.0.1)")
    p.add_argument("--url", help="the sayso to ask (default: SAYSO_URL)")
    p.add_argument("--key", help="its API key (default: SAYSO_KEY)")
    p.add_argument("--policy", help="the policy file (default: SAYSO_POLICY)")
    p.add_argument(
        "--channel", help="where the cards go (default: the policy's, else the key's first)"
    )
    p.add_argument(
        "--session",
        help="what makes a call's idempotency key unique (default: the client process)",
    )
    p.add_argument("--journal", help="the journal file (default ~/.local/state/sayso/...)")
    p.add_argument("upstream_command", nargs=argparse.REMAINDER, help="-- the upstream command")


def _upstream(args: argparse.Namespace) -> Upstream:
    from bot.config import ConfigError
    from bot.proxy.gateway import Upstream

    command = list(args.upstream_command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if bool(command) == bool(args.upstream):
        raise ConfigError("sayso proxy: give either -- <upstream command ...> or --upstream URL")
    headers: dict[str, str] = {}
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise ConfigError(f"--header {header!r}: write it 'Name: value'")
        headers[name.strip()] = value.strip()
    return Upstream(command=tuple(command), url=args.upstream, headers=headers)


def _name(args: argparse.Namespace, upstream: Upstream) -> str:
    if args.name:
        return str(args.name)
    if upstream.url:
        from urllib.parse import urlsplit

        return urlsplit(upstream.url).hostname or "upstream"
    first = [w for w in upstream.command if not w.startswith("-")]
    skip = {"python", "python3", "uvx", "npx", "node", "-m"}
    words = [Path(w).name for w in first if Path(w).name not in skip]
    return words[0] if words else "upstream"


def default_session(name: str) -> str:
    """The MCP client that started this proxy (its pid and start time): the same when that
    client restarts the proxy, another for another client."""
    parent = os.getppid()
    started = ""
    try:
        stat = Path(f"/proc/{parent}/stat").read_text()
        started = stat.rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        pass
    return f"{parent}.{started}" if started else str(parent)


async def run_proxy(args: argparse.Namespace, settings: Settings) -> None:
    from bot.client import AsyncSaysoClient
    from bot.config import ConfigError
    from bot.proxy.approvals import Approvals
    from bot.proxy.gateway import Gateway, connect
    from bot.proxy.journal import Journal, default_path
    from bot.proxy.policy import ProxyPolicyError, load_proxy_policy

    upstream = _upstream(args)
    name = _name(args, upstream)
    url = args.url or settings.sayso_url
    key = args.key or settings.secret("sayso_key")
    if not url or not key:
        raise ConfigError("sayso proxy: SAYSO_URL and SAYSO_KEY (or --url and --key) are needed")
    try:
        policy = load_proxy_policy(args.policy or settings.sayso_policy).server(name)
    except ProxyPolicyError as exc:
        raise ConfigError(f"policy file rejected: {exc}") from None
    client = AsyncSaysoClient(url, key)
    journal = Journal(args.journal or default_path())
    session = args.session or default_session(name)
    log.info("event=proxy_start name=%s upstream=%s session=%s", name, upstream.describe(), session)
    approvals = Approvals(
        client,
        journal,
        name=name,
        session=session,
        channel=args.channel or policy.channel,
    )
    try:
        async with connect(upstream) as session_:
            server = Gateway(session_, policy, approvals).server()
            if args.http:
                await _serve_http(server, args.host, args.http)
            else:
                from mcp.server.stdio import stdio_server

                async with stdio_server() as (read, write):
                    await server.run(read, write, server.create_initialization_options())
    finally:
        journal.close()


async def _serve_http(server: Any, host: str, port: int) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    security = None
    if host not in ("127.0.0.1", "localhost", "::1"):
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(host=host, transport_security=security)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()
