"""A run's fingerprint: digests of what decides its answer (the variant, the agent tree, the
endpoint, the prompts), stored with the run, so a re-run reuses it only when they are the same."""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._endpoints.openai import LLM
from .._runtime.agent import Agent, Task, member_agent
from ..kinds import BaseKind, ChildKind

if TYPE_CHECKING:
    from .variants import Endpoint, Variant

PARTS = ("variant", "agent tree", "endpoint", "prompt")
"""What a fingerprint tells apart, in the order a changed run names them."""

PART = "fingerprint"
"""The node row (of the run's root) that keeps a stored run's fingerprint."""

_DEPTH = 8
"""How deep a plain object's attributes are described."""

MASK = "***"
"""What stands for a secret (a field or key named like one): a new key is the same setup."""

_SECRET = re.compile(r"key|secret|password|passwd|credential|auth|token$", re.IGNORECASE)


def config_fingerprint(agent: Agent, variant: Variant, llm: Endpoint | None) -> dict[str, str]:
    """The digests of `variant`'s changes, of `agent`'s tree as given, and of the endpoint the
    variant meets (its class, label and model; never its key)."""
    session = {k: v for k, v in variant.session.items() if k != "llm"}  # the endpoint's part
    changes = {"session": session, "agents": variant.agents}
    return {
        "variant": digest(changes),
        "agent tree": digest(agent),
        "endpoint": digest(variant.session.get("llm", llm)),
    }


def run_fingerprint(variant: Variant, prompts: list[str]) -> dict[str, str]:
    """The whole fingerprint of `variant` on `prompts`."""
    return {**variant.fingerprint, "prompt": digest(prompts)}


def changed(stored: Mapping[str, Any], now: Mapping[str, str]) -> list[str]:
    """The parts of `now` that differ from a stored fingerprint."""
    return [part for part in PARTS if stored.get(part) != now.get(part)]


def digest(value: Any) -> str:
    """A stable digest of `value`: SHA-256 of its canonical JSON."""
    text = json.dumps(canonical(value), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def canonical(value: Any, path: frozenset[int] = frozenset(), depth: int = 0) -> Any:
    """`value` as plain JSON data that is the same in every process: agents, kinds, tools and
    endpoints by their configuration, functions and classes by their qualified names, other
    objects by their public attributes; a cycle or a deep object by its class; a value under a
    name like a secret's (`api_key`, `GITHUB_TOKEN`, `password`) by `MASK`."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if type(value) is list and all(type(item) is str for item in value):
        return value  # prompts: no need to ask what else a list might be
    if id(value) in path or depth > _DEPTH:
        return {"seen": _name(type(value))}
    path, depth = path | {id(value)}, depth + 1
    if isinstance(value, LLM):
        return {"endpoint": _name(type(value)), "label": value.label, "model": value.model}
    if isinstance(value, Agent) or (isinstance(value, type) and issubclass(value, Task)):
        return _agent(member_agent(value), path, depth)
    if isinstance(value, ChildKind):
        return {"kind": _name(type(value)), **canonical(_kind_arguments(value), path, depth)}
    if callable(getattr(value, "to_wire", None)) and not isinstance(value, type):
        return {"tool": canonical(value.to_wire(), path, depth)}
    if isinstance(value, Mapping):
        return {
            str(canonical(k, path, depth)): (MASK if _secret(k, v) else canonical(v, path, depth))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [canonical(item, path, depth) for item in value]
    if isinstance(value, set | frozenset):
        items = [canonical(item, path, depth) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True, default=str))
    if isinstance(value, type) or inspect.isroutine(value):
        return {"code": _name(value)}
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict) and fields:
        public = {k: v for k, v in fields.items() if not k.startswith("_")}
        return {"object": _name(type(value)), **canonical(public, path, depth)}
    return {"object": _name(type(value)), "repr": _repr(value)}


def _agent(agent: Agent, path: frozenset[int], depth: int) -> dict[str, Any]:
    fields = {
        "name": agent.name,
        "does": agent.does,
        "instructions": agent.instructions,
        "use_instructions": agent.use_instructions,
        "display_text": agent.display_text,
        "model": agent.model,
        "tools": agent.tools,
        "kind": agent.kind,
        "max_turns": agent.max_turns,
        "hooks": agent.hooks,
        "pause_on": agent.pause_on,
        "token_budget": agent.token_budget,
        "tool_call_budget": agent.tool_call_budget,
    }
    described = canonical(fields, path, depth)
    # a team's depth is its own: a deep tree is described whole
    described["team"] = [canonical(member, path, 0) for member in agent.team]
    return {"agent": described}


def _kind_arguments(kind: ChildKind) -> dict[str, Any]:
    """A kind's name and public attributes (a setting changed between cells too) and, for a
    `BaseKind`, its constructor's arguments with the defaults filled in (what `configured`
    builds on, kept under private names by some kinds)."""
    public = {k: v for k, v in getattr(kind, "__dict__", {}).items() if not k.startswith("_")}
    described = {"name": getattr(kind, "name", ""), "attributes": public}
    if isinstance(kind, BaseKind):
        args, kwargs = kind._given
        try:
            bound = inspect.signature(type(kind).__init__).bind(kind, *args, **kwargs)
        except TypeError:
            described["given"] = [list(args), kwargs]
        else:
            bound.apply_defaults()
            described["arguments"] = dict(list(bound.arguments.items())[1:])
    return described


def _secret(name: Any, value: Any) -> bool:
    return isinstance(name, str) and value is not None and _SECRET.search(name) is not None


def _name(code: Any) -> str:
    return f"{getattr(code, '__module__', '')}.{getattr(code, '__qualname__', repr(code))}"


def _repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        return ""
    return re.sub(r" at 0x[0-9A-Fa-f]+", "", text)
