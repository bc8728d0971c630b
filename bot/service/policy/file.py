"""The policy file (`SAYSO_POLICY=policy.yaml`): approval policy that ops can review.

```yaml
agents:
  ops:
    tools:
      deploy:
        approvers: [S0SRE]            # user (U…, W…) or group (S…) ids
        min_approvals: 2
        allow_self_approval: false
        require_reason: true
        expires_in: 2h                # 90s, 30m, 24h, 7d, or seconds
        escalate_after: 30m
        escalate_to: [S0LEADS]
        standing_approval: 1h
        require_approval: true        # optional: whether calls need approval at all
        rules:                        # the first matching rule wins
          - name: production
            when:
              environment: production          # equals
              # region: {one_of: [eu, us]}     # or glob: "prod-*", regex: "^prod"
            approvers: [S0SRE]
            min_approvals: 2
```

Each setting of the file overrides the code's for that tool. Checked against the loaded
agents; an error names the file's line.

Requests made over the API (`POST /v1/requests`) are matched by key name and tool (`"*"`
matches any; the most specific entry wins), and their rules by the request's arguments. Their
settings override the key's own policy; a caller may only narrow the result:

```yaml
api:
  keys:
    ci:                               # the key's name, or "*"
      tools:
        deploy:                       # the request's tool, or "*"
          approvers: [S0SRE]
          min_approvals: 2
          rules:
            - when: {environment: production}
              allow_self_approval: false
```
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from bot.agent import Agent, Tool
from bot.agent.rules import Rule
from bot.agent.util import parse_duration
from bot.service.policy.api import ApiOverride
from bot.service.policy.rules import ToolSettings, tool_settings
from bot.service.registry import AgentRegistry

PRINCIPAL = re.compile(r"^[UWS][A-Z0-9_]+$")
TOOL_KEYS = {
    "approvers",
    "min_approvals",
    "allow_self_approval",
    "require_reason",
    "expires_in",
    "escalate_after",
    "escalate_to",
    "standing_approval",
    "require_approval",
    "rules",
}
RULE_KEYS = {
    "name",
    "when",
    "approvers",
    "min_approvals",
    "allow_self_approval",
    "require_reason",
    "expires_in",
    "escalate_after",
    "escalate_to",
}
MATCHERS = {"equals", "one_of", "glob", "regex"}
NOT_FOR_API = {"escalate_after", "escalate_to", "standing_approval", "require_approval"}
"""What API requests do not take from the file (an API request always asks a person)."""
API_TOOL_KEYS = TOOL_KEYS - NOT_FOR_API
API_RULE_KEYS = RULE_KEYS - NOT_FOR_API
ANY = "*"


class PolicyError(ValueError):
    """A policy file that cannot be used: `path:line: reason`."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = path, line, reason


@dataclass(frozen=True)
class ToolOverride:
    """What the file says of one tool (None: the code's setting stays)."""

    settings: ToolSettings
    require_approval: bool | None = None
    has_rules: bool = False


@dataclass(frozen=True)
class PolicyFile:
    path: str
    tools: dict[tuple[str, str], ToolOverride] = field(default_factory=dict)
    api: dict[tuple[str, str], ApiOverride] = field(default_factory=dict)

    def settings(self, agent: Agent, tool: Tool) -> ToolSettings:
        found = self.tools.get((agent.id, tool.name))
        return found.settings if found else tool_settings(tool)

    def override(self, agent_id: str, tool_name: str) -> ToolOverride | None:
        return self.tools.get((agent_id, tool_name))

    def api_override(self, key_name: str, tool_name: str) -> ApiOverride | None:
        """The `api:` entry for this key and tool: the most specific of key and tool, key
        and any tool, any key and tool, any key and any tool."""
        for where in ((key_name, tool_name), (key_name, ANY), (ANY, tool_name), (ANY, ANY)):
            if where in self.api:
                return self.api[where]
        return None


def load_policy(path: str | Path, agents: AgentRegistry) -> PolicyFile:
    """Read and check the file; raise `PolicyError` naming the line of the first problem."""
    name = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise PolicyError(name, 0, f"cannot read the file ({exc.strerror})") from None
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        raise PolicyError(name, line, f"not valid YAML: {getattr(exc, 'problem', exc)}") from None
    return _Reader(name, agents).read(root)


def _line(node: yaml.Node) -> int:
    return int(node.start_mark.line) + 1


class _Reader:
    def __init__(self, path: str, agents: AgentRegistry) -> None:
        self.path = path
        self.agents = agents

    def fail(self, node: yaml.Node, reason: str) -> PolicyError:
        return PolicyError(self.path, _line(node), reason)

    def mapping(self, node: yaml.Node, what: str) -> list[tuple[yaml.Node, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"{what} must be a mapping")
        return list(node.value)

    def scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, "expected a single value")
        return yaml.safe_load(yaml.serialize(node))

    def read(self, root: yaml.Node | None) -> PolicyFile:
        if root is None:
            return PolicyFile(self.path)
        tools: dict[tuple[str, str], ToolOverride] = {}
        api: dict[tuple[str, str], ApiOverride] = {}
        for key, value in self.mapping(root, "the file"):
            if self.scalar(key) == "proxy":
                continue  # `sayso proxy` and `sayso hook` read it (bot/proxy/policy.py)
            if self.scalar(key) == "api":
                api.update(self.api(value))
                continue
            if self.scalar(key) != "agents":
                raise self.fail(
                    key,
                    f"unknown key {self.scalar(key)!r}: the file has `agents:`, `api:` and "
                    "`proxy:`",
                )
            for agent_key, agent_node in self.mapping(value, "agents"):
                agent_id = str(self.scalar(agent_key))
                agent = self.agents.get(agent_id)
                if agent is None:
                    known = ", ".join(a.id for a in self.agents) or "none"
                    raise self.fail(agent_key, f"unknown agent {agent_id!r} (loaded: {known})")
                for tkey, tnode in self.mapping(agent_node, f"agent {agent_id}"):
                    if self.scalar(tkey) != "tools":
                        raise self.fail(tkey, f"unknown key {self.scalar(tkey)!r}: use `tools:`")
                    for name_node, body in self.mapping(tnode, "tools"):
                        tool_name = str(self.scalar(name_node))
                        tool = agent.tools.get(tool_name)
                        if tool is None:
                            known = ", ".join(agent.tools) or "none"
                            raise self.fail(
                                name_node,
                                f"unknown tool {tool_name!r} of agent {agent_id} "
                                f"(its tools: {known})",
                            )
                        tools[(agent_id, tool_name)] = self.tool(tool, body)
        return PolicyFile(self.path, tools, api)

    def api(self, node: yaml.Node) -> dict[tuple[str, str], ApiOverride]:
        """`api: keys: NAME: tools: TOOL: {...}` (NAME and TOOL may be "*")."""
        out: dict[tuple[str, str], ApiOverride] = {}
        for key, keys_node in self.mapping(node, "api"):
            if self.scalar(key) != "keys":
                raise self.fail(key, f"unknown key {self.scalar(key)!r}: use `keys:`")
            for name_node, key_node in self.mapping(keys_node, "keys"):
                key_name = str(self.scalar(name_node))
                for tkey, tnode in self.mapping(key_node, f"key {key_name}"):
                    if self.scalar(tkey) != "tools":
                        raise self.fail(tkey, f"unknown key {self.scalar(tkey)!r}: use `tools:`")
                    for tool_node, body in self.mapping(tnode, "tools"):
                        out[(key_name, str(self.scalar(tool_node)))] = self.api_tool(body)
        return out

    def api_tool(self, node: yaml.Node) -> ApiOverride:
        changes: dict[str, Any] = {}
        rules: tuple[Rule, ...] = ()
        for key, value in self.mapping(node, "an API tool"):
            k = str(self.scalar(key))
            if k not in API_TOOL_KEYS:
                raise self.fail(
                    key,
                    f"unknown setting {k!r} for API requests (use one of {sorted(API_TOOL_KEYS)})",
                )
            if k == "rules":
                if not isinstance(value, yaml.SequenceNode):
                    raise self.fail(value, "rules must be a list")
                rules = tuple(self.rule(None, i, item) for i, item in enumerate(value.value))
            else:
                changes[k] = self.setting(k, value)
        self.check_quorum(node, changes.get("approvers", ()), changes.get("min_approvals", 1))
        return ApiOverride(changes, rules)

    def tool(self, tool: Tool, node: yaml.Node) -> ToolOverride:
        settings = tool_settings(tool)
        require_approval: bool | None = None
        rules: tuple[Rule, ...] | None = None
        changes: dict[str, Any] = {}
        for key, value in self.mapping(node, f"tool {tool.name}"):
            k = str(self.scalar(key))
            if k not in TOOL_KEYS:
                raise self.fail(key, f"unknown setting {k!r} (use one of {sorted(TOOL_KEYS)})")
            if k == "rules":
                rules = self.rules(tool, value)
            elif k == "require_approval":
                require_approval = self.boolean(value, k)
            else:
                changes[k] = self.setting(k, value)
        if rules is not None:
            changes["rules"] = rules
        settings = replace(settings, **changes)
        self.check_quorum(node, settings.approvers, settings.min_approvals)
        return ToolOverride(settings, require_approval, has_rules=rules is not None)

    def setting(self, key: str, node: yaml.Node) -> Any:
        if key in ("approvers", "escalate_to"):
            return self.principals(node)
        if key == "min_approvals":
            value = self.scalar(node)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise self.fail(node, "min_approvals must be a whole number of at least 1")
            return value
        if key in ("allow_self_approval", "require_reason"):
            return self.boolean(node, key)
        try:
            return parse_duration(self.scalar(node))
        except ValueError as exc:
            raise self.fail(node, f"{key}: {exc}") from None

    def boolean(self, node: yaml.Node, key: str) -> bool:
        value = self.scalar(node)
        if not isinstance(value, bool):
            raise self.fail(node, f"{key} must be true or false")
        return value

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

    def check_quorum(self, node: yaml.Node, approvers: tuple[str, ...], needed: int) -> None:
        """Impossible: more approvals than the people listed (when no group is listed)."""
        if (
            approvers
            and not any(a.startswith("S") for a in approvers)
            and needed > len(set(approvers))
        ):
            raise self.fail(
                node,
                f"impossible quorum: min_approvals {needed} but only {len(set(approvers))} "
                "approver(s) listed",
            )

    def rules(self, tool: Tool, node: yaml.Node) -> tuple[Rule, ...]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, "rules must be a list")
        return tuple(self.rule(tool, i, item) for i, item in enumerate(node.value))

    def rule(self, tool: Tool | None, index: int, node: yaml.Node) -> Rule:
        """One rule; `tool` None: an API request's (any argument name may be matched)."""
        fields: dict[str, Any] = {}
        when: Callable[[dict[str, Any]], bool] | None = None
        allowed = RULE_KEYS if tool is not None else API_RULE_KEYS
        for key, value in self.mapping(node, "a rule"):
            k = str(self.scalar(key))
            if k not in allowed:
                raise self.fail(key, f"unknown rule setting {k!r} (use one of {sorted(allowed)})")
            if k == "when":
                when = self.condition(tool, value)
            elif k == "name":
                fields["name"] = str(self.scalar(value))
            else:
                fields[k] = self.setting(k, value)
        if when is None:
            raise self.fail(node, "a rule needs `when:` (argument matches)")
        if fields.get("approvers") is not None:
            self.check_quorum(node, fields["approvers"], fields.get("min_approvals") or 1)
        fields.setdefault("name", f"rule {index + 1}")
        return Rule(when=when, **fields)

    def condition(self, tool: Tool | None, node: yaml.Node) -> Callable[[dict[str, Any]], bool]:
        arguments = set(tool.parameters.get("properties", {})) if tool is not None else None
        tests: list[Callable[[dict[str, Any]], bool]] = []
        for key, value in self.mapping(node, "when"):
            arg = str(self.scalar(key))
            if tool is not None and arguments is not None and arg not in arguments:
                known = ", ".join(sorted(arguments)) or "none"
                raise self.fail(key, f"unknown argument {arg!r} of tool {tool.name} ({known})")
            tests.append(self.matcher(arg, value))
        if not tests:
            raise self.fail(node, "`when:` needs at least one argument match")
        return lambda arguments: all(test(arguments) for test in tests)

    def matcher(self, arg: str, node: yaml.Node) -> Callable[[dict[str, Any]], bool]:
        if not isinstance(node, yaml.MappingNode):
            expected = self.scalar(node)
            return lambda a: a.get(arg) == expected
        pairs = self.mapping(node, f"the match of {arg}")
        if len(pairs) != 1:
            raise self.fail(node, f"one of {sorted(MATCHERS)} per argument")
        key, value = pairs[0]
        kind = str(self.scalar(key))
        if kind == "equals":
            expected = self.scalar(value)
            return lambda a: a.get(arg) == expected
        if kind == "one_of":
            if not isinstance(value, yaml.SequenceNode):
                raise self.fail(value, "one_of takes a list")
            options = [self.scalar(v) for v in value.value]
            return lambda a: a.get(arg) in options
        if kind == "glob":
            pattern = str(self.scalar(value))
            return lambda a: isinstance(a.get(arg), str) and fnmatch.fnmatchcase(a[arg], pattern)
        if kind == "regex":
            try:
                compiled = re.compile(str(self.scalar(value)))
            except re.error as exc:
                raise self.fail(value, f"bad regex: {exc}") from None
            return lambda a: isinstance(a.get(arg), str) and compiled.search(a[arg]) is not None
        raise self.fail(key, f"unknown match {kind!r} (use one of {sorted(MATCHERS)})")
