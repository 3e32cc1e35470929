"""Session-wide caps on one run (model calls, spawned sub-agents, tokens), loud when hit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._base.errors import ConfigurationError
from ..events import ErrorOccurred

if TYPE_CHECKING:
    from .node import Node

MAX_MODEL_CALLS = 2_000
"""Model requests one run may make, across the whole tree (summaries included)."""
MAX_NODES = 500
"""Sub-agents one run may spawn, across the whole tree."""
MAX_TOKENS = 50_000_000
"""Tokens (as the endpoint reports them) one run may spend, across the whole tree."""


class LimitReached(Exception):
    """A session cap stopped a node; its task ends `incomplete` with this text."""


def checked_count(name: str, value: int, least: int, what: str) -> int:
    """`value` if it is a whole number of at least `least` (`what` says what it counts)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ConfigurationError(
            f"{name} ({what}) must be a whole number of at least {least}, not {value!r}"
        )
    return value


def checked_cap(name: str, value: int | None) -> int | None:
    """`value` if it is a usable cap (a positive int, or None for none)."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ConfigurationError(
            f"{name} must be a positive whole number (or None for no cap), not {value!r}"
        )
    return value


def before_model_call(node: Node) -> None:
    """Count one model request of the current run; raise `LimitReached` past a cap."""
    session = node.session
    if session.limit_hit is not None:
        raise LimitReached(session.limit_hit)
    calls, cap = session.run_model_calls, session.max_model_calls
    if cap is not None and calls >= cap:
        _hit(node, "max_model_calls", cap, f"this run made {calls} model calls")
    tokens, cap = session.run_usage.total_tokens, session.max_tokens
    if cap is not None and tokens >= cap:
        _hit(node, "max_tokens", cap, f"this run used {tokens} tokens")
    session.run_model_calls = calls + 1


def spawn_refusal(node: Node) -> str | None:
    """Why the current run may not spawn another sub-agent below `node`, or None; counts the
    spawn if it may. Past `max_nodes` the run stops as at the other caps."""
    session = node.session
    if session.limit_hit is not None:
        return session.limit_hit
    spawned, cap = session.run_nodes, session.max_nodes
    if cap is not None and spawned >= cap:
        try:
            _hit(node, "max_nodes", cap, f"this run has spawned {spawned} sub-agents")
        except LimitReached as stop:  # the `task` call is refused with the text all stop with
            return str(stop)
    session.run_nodes = spawned + 1
    return None


def _hit(node: Node, name: str, cap: int, what: str) -> None:
    """Stop `node` and, through the same message at their next model call, every other node."""
    text = node.session.limit_hit = (
        f"hit the session's {name} ({cap}): {what}; the work so far is kept. If the run "
        f"needs more, raise it: sn.Session(..., {name}=...)"
    )
    node.emit(ErrorOccurred(error_type="LimitReached", message=text))
    raise LimitReached(text)
