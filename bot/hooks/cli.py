"""`sayso hook claude-code [--print-settings]`: dispatched by bot/cli.py before anything heavy
is imported (a hook is a process per tool call)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

HOOKS = ("claude-code",)


def add_hook_parser(sub: Any) -> None:
    """For `sayso --help` (bot/cli.py runs `sayso hook ...` itself, without this parser)."""
    hook = sub.add_parser("hook", help="agent hooks: sayso hook claude-code [--print-settings]")
    configure(hook)


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent", choices=HOOKS)
    p.add_argument(
        "--print-settings", action="store_true", help="print the settings.json snippet and exit"
    )
    p.add_argument(
        "--event",
        choices=["PreToolUse", "PermissionRequest"],
        default="PreToolUse",
        help="with --print-settings: the hook event to register (default PreToolUse)",
    )
    p.add_argument("--policy", help="the policy file (default: SAYSO_POLICY)")
    p.add_argument(
        "--timeout", help="how long to wait for a decision: 90s, 10m, … (default: policy, 10m)"
    )
    p.add_argument(
        "--on-timeout", choices=["ask", "deny"], help="then: ask in the terminal, or deny"
    )


class HookArgs:
    """The hook's options (as argparse would give them)."""

    def __init__(self) -> None:
        self.agent = "claude-code"
        self.print_settings = False
        self.event = "PreToolUse"
        self.policy: str | None = None
        self.timeout: str | None = None
        self.on_timeout: str | None = None


def _quick(argv: Sequence[str]) -> HookArgs | None:
    """The options of a hook call, read without argparse (a process per tool call); None when
    argparse must read them (help, settings, anything unusual)."""
    words = list(argv)
    if words[:1] != ["claude-code"]:
        return None
    args = HookArgs()
    rest = words[1:]
    while rest:
        option = rest.pop(0)
        name, eq, value = option.partition("=")
        key = {"--policy": "policy", "--timeout": "timeout", "--on-timeout": "on_timeout"}.get(name)
        if key is None:
            return None
        if not eq:
            if not rest:
                return None
            value = rest.pop(0)
        if key == "on_timeout" and value not in ("ask", "deny"):
            return None
        setattr(args, key, value)
    return args


def run_hook(argv: Sequence[str]) -> int:
    args: Any = _quick(argv)
    if args is None:
        import argparse

        p = argparse.ArgumentParser(prog="sayso hook", description="agent hooks")
        configure(p)
        args = p.parse_args(list(argv))
    from bot.hooks import claude_code

    if args.print_settings:
        return claude_code.print_settings(args)
    return claude_code.main(args)
