"""Variants: what each one changes, checked against the agent before anything runs, then applied
to a private copy of the agent tree and endpoint."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._base.errors import ConfigurationError
from .._base.prices import checked_prices
from .._endpoints.openai import LLM
from .._runtime.agent import Agent, member_agent
from .._runtime.limits import checked_cap
from .._runtime.preprocess import checked_preprocessor
from ..kinds import BaseKind, ChildKind, Main, Worker, registry
from .fingerprint import config_fingerprint

SESSION_OPTIONS = (
    "durability",
    "hooks",
    "llm",
    "max_depth",
    "max_model_calls",
    "max_nodes",
    "max_parallel",
    "max_tokens",
    "model",
    "preprocessor",
    "prices",
    "reattach",
    "scope",
    "state",
    "token_counter",
    "tool_context",
)
"""Keys of a variant that change the session (`model`: the endpoint's default model; the
others are `sn.Session`'s keywords of that name)."""

CHOICES = {"durability": ("turn", "async", "exit"), "reattach": ("run", "session")}
"""Session options that take one of a few words."""

AGENT_FIELDS = (
    "does",
    "hooks",
    "instructions",
    "kind",
    "max_turns",
    "model",
    "token_budget",
    "tool_call_budget",
    "tools",
)
"""Keys of an agent's changes that set the agent's attribute of that name."""

Endpoint = LLM | Callable[[], LLM]
"""What `llm=` takes: an endpoint (each variant gets `llm.fresh()`) or a function making one."""


@dataclass
class Variant:
    """One variant, checked: its name, the session options it sets, its agents' changes."""

    name: str
    session: dict[str, Any] = field(default_factory=dict)
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Agent name -> attribute -> value (a kind already built)."""
    fingerprint: dict[str, str] = field(default_factory=dict)
    """Digests of the variant, the agent tree and the endpoint (see `fingerprint.py`)."""

    def build(self, agent: Agent, llm: Endpoint | None) -> tuple[Agent, LLM, dict[str, Any]]:
        """A private copy of `agent`'s tree with the changes and its own endpoints, a fresh
        endpoint for the session, the session options."""
        tree = copy_tree(agent, {})
        for node in walk(tree):
            for attribute, value in self.agents.get(node.name, {}).items():
                setattr(node, attribute, list(value) if attribute == "hooks" else value)
        options = dict(self.session)
        for key in ("state", "tool_context"):  # a run may write to them: each has its own
            if key in options:
                options[key] = dict(options[key])
        source = options.pop("llm", llm)
        endpoint = fresh_endpoint(source, self.name)
        fresh_models(tree, {id(source): endpoint} if isinstance(source, LLM) else {})
        model = options.pop("model", None)
        if model is not None:
            endpoint.model = model
        return tree, endpoint, options


def check_variants(
    agent: Agent, variants: Mapping[str, Any] | None, llm: Endpoint | None
) -> list[Variant]:
    """The variants, checked against `agent`; raises `ConfigurationError` naming the first
    variant that does not apply (an unknown agent or parameter, a value of the wrong type).

    No variants means one, `baseline`, that changes nothing.
    """
    if variants is None:
        variants = {"baseline": {}}
    example = (
        "{'worker': {'helper': sn.kinds.Worker()}, 'resident': {'helper': sn.kinds.Resident()}}"
    )
    if not isinstance(variants, Mapping):
        raise ConfigurationError(
            f"variants= takes a dict {{name: changes}}, not {type(variants).__name__}, "
            f"e.g. {example}"
        )
    if not variants:
        raise ConfigurationError(
            f"variants= is empty: give at least one variant, e.g. {example}, or leave it out "
            "to run the agent as it is (one variant, 'baseline')"
        )
    agents = {a.name: a for a in walk(agent)}
    checked = []
    for name, changes in variants.items():
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"variant names must be non-empty strings, not {name!r}")
        checked.append(_check(name, changes, agent, agents))
    if llm is None and any("llm" not in v.session for v in checked):
        raise ConfigurationError(
            "no endpoint: pass llm=sn.script(...) or sn.mock_llm(handler) (each variant gets a "
            "fresh copy), or give every variant its own 'llm'"
        )
    for variant in checked:
        variant.fingerprint = config_fingerprint(agent, variant, llm)
    return checked


def _check(name: str, changes: Any, top: Agent, agents: dict[str, Agent]) -> Variant:
    where = f"variant {name!r}"
    if changes is None:
        changes = {}
    if not isinstance(changes, Mapping):
        raise ConfigurationError(
            f"{where}: changes must be a dict such as {{'helper': sn.kinds.Resident()}}, "
            f"not {type(changes).__name__}"
        )
    variant = Variant(name)
    for key, value in changes.items():
        if key in SESSION_OPTIONS:
            variant.session[key] = _session_value(where, key, value)
        elif key in agents:
            variant.agents[key] = _agent_changes(where, agents[key], value, key == top.name)
        else:
            raise ConfigurationError(
                f"{where}: {key!r} is neither an agent of {top.name!r}'s team (agents: "
                f"{', '.join(sorted(agents))}) nor a session option ({', '.join(SESSION_OPTIONS)})"
            )
    return variant


def _session_value(where: str, key: str, value: Any) -> Any:
    if key == "llm" and not (isinstance(value, LLM) or callable(value)):
        raise ConfigurationError(
            f"{where}: 'llm' must be an endpoint (sn.script(...), sn.mock_llm(...), sn.LLM(...)) "
            f"or a function making one, not {type(value).__name__}"
        )
    if key in ("max_depth", "max_parallel") and not (
        isinstance(value, int) and not isinstance(value, bool) and value >= 1
    ):
        raise ConfigurationError(f"{where}: {key!r} must be a positive int, not {value!r}")
    if key in ("max_model_calls", "max_nodes", "max_tokens"):
        try:
            checked_cap(key, value)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None
    if key == "prices":
        try:
            checked_prices(value)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None
    if key in CHOICES and value not in CHOICES[key]:
        raise ConfigurationError(
            f"{where}: {key!r} must be one of {', '.join(map(repr, CHOICES[key]))}, not {value!r}"
        )
    if key in ("state", "tool_context") and not isinstance(value, Mapping):
        raise ConfigurationError(f"{where}: {key!r} must be a dict, not {type(value).__name__}")
    if key == "token_counter" and not callable(value):
        raise ConfigurationError(
            f"{where}: 'token_counter' must be a function (message -> tokens), not "
            f"{type(value).__name__}"
        )
    if key == "preprocessor":
        try:
            checked_preprocessor(value)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: {exc}") from None
    if key == "hooks":
        return list(value)
    return value


def _agent_changes(where: str, agent: Agent, value: Any, top: bool) -> dict[str, Any]:
    if isinstance(value, str | ChildKind | type):
        value = {"kind": value}
    if not isinstance(value, Mapping):
        raise ConfigurationError(
            f"{where}: changes of agent {agent.name!r} must be a kind (sn.kinds.Resident(...)) or "
            f"a dict of its attributes, not {type(value).__name__}"
        )
    fields = {k: v for k, v in value.items() if k in AGENT_FIELDS}
    kind = _kind(where, agent, fields.get("kind", agent.kind), top)
    params = kind.parameters() if isinstance(kind, BaseKind) else []
    unknown = [k for k in value if k not in AGENT_FIELDS and k not in params]
    if unknown:
        raise ConfigurationError(
            f"{where}: {unknown[0]!r} is not something to change on agent {agent.name!r} "
            f"(its attributes: {', '.join(AGENT_FIELDS)}; parameters of its kind "
            f"{type(kind).__name__}: {', '.join(params) or 'none'})"
        )
    given = {k: v for k, v in value.items() if k in params and k not in AGENT_FIELDS}
    if given and isinstance(kind, BaseKind):
        try:
            kind = kind.configured(**given)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{where}: agent {agent.name!r}: {exc}") from exc
    if "kind" in fields or given:
        fields["kind"] = kind
    for key in ("max_turns", "token_budget", "tool_call_budget"):
        if key in fields and not (fields[key] is None or isinstance(fields[key], int)):
            raise ConfigurationError(f"{where}: {agent.name}.{key} must be an int or None")
    if "tools" in fields:
        from .._tools.tool import Tool

        fields["tools"] = [t if isinstance(t, Tool) else Tool(t) for t in fields["tools"]]
    return fields


def _kind(where: str, agent: Agent, kind: Any, top: bool) -> ChildKind:
    """The kind `kind` names (an instance, a class, a registered name); None: the default."""
    if kind is None:
        return Main() if top else Worker()
    if isinstance(kind, str):
        factory = registry().get(kind)
        if factory is None:
            raise ConfigurationError(
                f"{where}: no kind named {kind!r} for agent {agent.name!r} "
                f"(registered: {', '.join(sorted(registry()))})"
            )
        return factory()
    if isinstance(kind, type):
        try:
            kind = kind()
        except TypeError as exc:
            raise ConfigurationError(
                f"{where}: cannot build the kind {kind.__name__} of agent {agent.name!r} "
                f"without arguments ({exc}); pass an instance"
            ) from exc
    if not isinstance(kind, ChildKind):
        raise ConfigurationError(
            f"{where}: the kind of agent {agent.name!r} must be an sn.kinds instance, class or "
            f"registered name, not {type(kind).__name__}"
        )
    return kind


def copy_tree(agent: Agent, memo: dict[int, Agent]) -> Agent:
    """A copy of `agent` and its team (`sn.Task` members compiled), sharing tools and kinds; a
    member that appears twice stays one agent."""
    if id(agent) in memo:
        return memo[id(agent)]
    twin = copy.copy(agent)
    memo[id(agent)] = twin
    twin.tools = list(agent.tools)
    twin.hooks = list(agent.hooks)
    twin.pause_on = set(agent.pause_on)
    twin.team = [copy_tree(member_agent(m), memo) for m in agent.team]
    return twin


def fresh_models(tree: Agent, made: dict[int, LLM]) -> None:
    """Give every agent of `tree` whose `model` is an endpoint a fresh copy of it (an
    `sn.script` starts from its first reply); agents that shared an endpoint share its copy
    (`made`: the copies so far, by the original's id)."""
    for node in walk(tree):
        if isinstance(node.model, LLM):
            original = id(node.model)
            if original not in made:
                made[original] = node.model.fresh()
            node.model = made[original]


def tree_endpoints(tree: Agent) -> list[LLM]:
    """The endpoints `tree`'s agents call instead of the session's, each once."""
    found = {id(node.model): node.model for node in walk(tree) if isinstance(node.model, LLM)}
    return list(found.values())


def walk(agent: Agent) -> list[Agent]:
    """`agent` and every agent reachable through teams, each once, top first."""
    seen: dict[int, Agent] = {}
    stack = [agent]
    while stack:
        here = stack.pop(0)
        if id(here) not in seen:
            seen[id(here)] = here
            stack.extend(member_agent(m) for m in here.team)
    return list(seen.values())


def fresh_endpoint(llm: Endpoint | None, variant: str) -> LLM:
    """The endpoint one run uses: `llm.fresh()`, or what a factory makes."""
    if isinstance(llm, LLM):
        return llm.fresh()
    if callable(llm):
        made = llm()
        if not isinstance(made, LLM):
            raise ConfigurationError(
                f"variant {variant!r}: the llm factory returned {type(made).__name__}, not an "
                "endpoint (sn.script(...), sn.mock_llm(...), sn.LLM(...))"
            )
        return made
    raise ConfigurationError(f"variant {variant!r} has no endpoint: pass llm=")
