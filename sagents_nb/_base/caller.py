"""Which node is calling the model: set by the turn loop around each request, read by an inline
mock endpoint (`sn.ChatRequest.node`, `.agent`, `.turn`) and by path-routed mocks."""

from __future__ import annotations

import functools
import re
from contextvars import ContextVar
from typing import NamedTuple


class Caller(NamedTuple):
    """The node a model request is for (a named tuple: a frozen dataclass costs ~8x as much to
    define at import, and more to make per request)."""

    node: str
    """Its path, e.g. `boss/explore.1`."""
    agent: str
    """Its agent's name."""
    turn: int
    """Its turn within its current task, from 1."""


CALLER: ContextVar[Caller | None] = ContextVar("sagents_nb_caller", default=None)
"""The caller of the request being sent on this task (None outside a node's model call)."""


@functools.lru_cache(maxsize=256)
def path_pattern(glob: str) -> re.Pattern[str]:
    """A glob over node paths as a pattern: `*` is any text within one segment (`boss/*` is a
    child of boss, `explore.*` any explore node), `**` any number of segments, `?` one
    character of a segment."""
    parts = re.split(r"(\*\*|\*|\?)", glob)
    pieces = {"**": ".*", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(pieces.get(part, re.escape(part)) for part in parts) + r"\Z")


def path_matches(glob: str, path: str) -> bool:
    """Whether the node path `path` matches `glob` (see `path_pattern`)."""
    return path_pattern(glob).match(path) is not None
