"""Reads the `proxy:` section of the policy file's YAML into bot/proxy/policy.py's types, with
the agents' reader's keys, argument matches and `path:line: reason` errors
(bot/service/policy/file.py). Imported only when the file must be parsed."""

from __future__ import annotations

import re
from typing import Any

import yaml

from bot.proxy.policy import (
    ACTIONS,
    ArgMatch,
    Gate,
    ProxyPolicyError,
    ProxyRule,
    ServerPolicy,
    ToolEntry,
    seconds,
)

PRINCIPAL = re.compile(r"^[UWS][A-Z0-9_]+$")
GATE_KEYS = {
    "approvers",
    "min_approvals",
    "allow_self_approval",
    "require_reason",
    "expires_in",
    "escalate_after",
    "escalate_to",
}
TOOL_KEYS = GATE_KEYS | {"action", "rules"}
RULE_KEYS = GATE_KEYS | {"name", "when", "action"}
SERVER_KEYS = {"tools", "default", "channel", "timeout", "on_timeout"}
MATCHERS = {"equals", "one_of", "glob", "regex"}


def compose(text: str, name: str) -> yaml.Node | None:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.compose(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        reason = f"not valid YAML: {getattr(exc, 'problem', exc)}"
        raise ProxyPolicyError(name, line, reason) from None


def read_proxy_section(text: str, name: str) -> dict[str, ServerPolicy]:
    root = compose(text, name)
    if root is None:
        return {}
    reader = _Reader(name)
    for key, value in reader.mapping(root, "the file"):
        if reader.scalar(key) == "proxy":
            return reader.servers(value)
    return {}


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


class _Reader:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, node: yaml.Node, reason: str) -> ProxyPolicyError:
        return ProxyPolicyError(self.path, _line(node), reason)

    def mapping(self, node: yaml.Node, what: str) -> list[tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{what} must be a mapping")
        return list(node.value)

    def scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, "expected a single value")
        return yaml.safe_load(yaml.serialize(node))

    def servers(self, node: yaml.Node) -> dict[str, ServerPolicy]:
        out: dict[str, ServerPolicy] = {}
        for key, value in self.mapping(node, "proxy"):
            server = str(self.scalar(key))
            out[server] = self.server(server, value)
        return out

    def server(self, name: str, node: yaml.Node) -> ServerPolicy:
        policy = ServerPolicy(name)
        for key, value in self.mapping(node, f"proxy server {name}"):
            k = str(self.scalar(key))
            if k not in SERVER_KEYS:
                known = sorted(SERVER_KEYS)
                raise self.fail(key, f"unknown key {k!r} of {name} (use one of {known})")
            if k == "tools":
                entries = tuple(self.tool(n, v) for n, v in self.mapping(value, "tools"))
                policy = policy._replace(tools=entries)
            elif k == "default":
                policy = policy._replace(default=self.action(value))
            elif k == "channel":
                policy = policy._replace(channel=str(self.scalar(value)))
            elif k == "timeout":
                policy = policy._replace(timeout=self.duration(value, k))
            else:
                choice = self.scalar(value)
                if choice not in ("ask", "deny"):
                    raise self.fail(value, "on_timeout is ask or deny")
                policy = policy._replace(on_timeout=choice)
        return policy

    def action(self, node: yaml.Node) -> Any:
        value = self.scalar(node)
        if value not in ACTIONS:
            raise self.fail(node, f"action {value!r}: use allow, deny or approve")
        return value

    def tool(self, name_node: yaml.Node, node: yaml.Node) -> ToolEntry:
        pattern = str(self.scalar(name_node))
        action = None
        settings: dict[str, Any] = {}
        raw_rules: list[tuple[yaml.Node, str, tuple[ArgMatch, ...], Any, dict[str, Any]]] = []
        for key, value in self.mapping(node, f"tool {pattern}"):
            k = str(self.scalar(key))
            if k not in TOOL_KEYS:
                raise self.fail(key, f"unknown setting {k!r} (use one of {sorted(TOOL_KEYS)})")
            if k == "action":
                action = self.action(value)
            elif k == "rules":
                raw_rules = self.rules(value)
            else:
                settings[k] = self.setting(k, value)
        gate = Gate(**settings)
        self.check_quorum(node, gate)
        rules = []
        for rule_node, name, when, rule_action, own in raw_rules:
            rule_gate = Gate(**{**settings, **own})
            if "approvers" in own:
                self.check_quorum(rule_node, rule_gate)
            rules.append(ProxyRule(name, when, rule_action, rule_gate))
        return ToolEntry(pattern, _line(name_node), action, gate, tuple(rules))

    def setting(self, key: str, node: yaml.Node) -> Any:
        if key in ("approvers", "escalate_to"):
            return self.principals(node)
        if key == "min_approvals":
            value = self.scalar(node)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise self.fail(node, "min_approvals must be a whole number of at least 1")
            return value
        if key in ("allow_self_approval", "require_reason"):
            value = self.scalar(node)
            if not isinstance(value, bool):
                raise self.fail(node, f"{key} must be true or false")
            return value
        return self.duration(node, key)

    def duration(self, node: yaml.Node, key: str) -> float:
        try:
            return seconds(self.scalar(node))
        except ValueError as exc:
            raise self.fail(node, f"{key}: {exc}") from None

    def principals(self, node: yaml.Node) -> tuple[str, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, "expected a list of user (U…) or group (S…) ids")
        out = []
        for item in node.value:
            value = str(self.scalar(item))
            if not PRINCIPAL.match(value):
                raise self.fail(
                    item, f"{value!r} is not a Slack user id (U…, W…) or user group id (S…)"
                )
            out.append(value)
        return tuple(out)

    def check_quorum(self, node: yaml.Node, gate: Gate) -> None:
        """Impossible: more approvals than the people listed (when no group is listed)."""
        people = set(gate.approvers)
        if (
            people
            and not any(a.startswith("S") for a in people)
            and gate.min_approvals > len(people)
        ):
            raise self.fail(
                node,
                f"impossible quorum: min_approvals {gate.min_approvals} but only {len(people)} "
                "approver(s) listed",
            )

    def rules(
        self, node: yaml.Node
    ) -> list[tuple[yaml.Node, str, tuple[ArgMatch, ...], Any, dict[str, Any]]]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, "rules must be a list")
        return [self.rule(i, item) for i, item in enumerate(node.value)]

    def rule(
        self, index: int, node: yaml.Node
    ) -> tuple[yaml.Node, str, tuple[ArgMatch, ...], Any, dict[str, Any]]:
        name = f"rule {index + 1}"
        when: tuple[ArgMatch, ...] | None = None
        action = None
        own: dict[str, Any] = {}
        for key, value in self.mapping(node, "a rule"):
            k = str(self.scalar(key))
            if k not in RULE_KEYS:
                raise self.fail(key, f"unknown rule setting {k!r} (use one of {sorted(RULE_KEYS)})")
            if k == "when":
                when = self.condition(value)
            elif k == "name":
                name = str(self.scalar(value))
            elif k == "action":
                action = self.action(value)
            else:
                own[k] = self.setting(k, value)
        if when is None:
            raise self.fail(node, "a rule needs `when:` (argument matches)")
        return node, name, when, action, own

    def condition(self, node: yaml.Node) -> tuple[ArgMatch, ...]:
        tests = tuple(self.matcher(str(self.scalar(k)), v) for k, v in self.mapping(node, "when"))
        if not tests:
            raise self.fail(node, "`when:` needs at least one argument match")
        return tests

    def matcher(self, arg: str, node: yaml.Node) -> ArgMatch:
        if not isinstance(node, yaml.MappingNode):
            return ArgMatch(arg, "equals", self.scalar(node))
        pairs = self.mapping(node, f"the match of {arg}")
        if len(pairs) != 1:
            raise self.fail(node, f"one of {sorted(MATCHERS)} per argument")
        key, value = pairs[0]
        kind = str(self.scalar(key))
        if kind == "equals":
            return ArgMatch(arg, kind, self.scalar(value))
        if kind == "one_of":
            if not isinstance(value, yaml.SequenceNode):
                raise self.fail(value, "one_of takes a list")
            return ArgMatch(arg, kind, tuple(self.scalar(v) for v in value.value))
        if kind == "glob":
            return ArgMatch(arg, kind, str(self.scalar(value)))
        if kind == "regex":
            pattern = str(self.scalar(value))
            try:
                re.compile(pattern)
            except re.error as exc:
                raise self.fail(value, f"bad regex: {exc}") from None
            return ArgMatch(arg, kind, pattern)
        raise self.fail(key, f"unknown match {kind!r} (use one of {sorted(MATCHERS)})")
