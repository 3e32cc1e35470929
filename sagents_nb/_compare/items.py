"""A sweep's items: what `prompts=` takes (strings, conversations, dicts), made uniform."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any

from .._base.checks import refuse
from .._base.errors import ConfigurationError


@dataclass
class Item:
    """One unit of work: a conversation (prompts sent in order to one session)."""

    id: Any
    prompts: list[str]
    meta: dict[str, Any] = field(default_factory=dict)


def conversation(prompts: str | Iterable[str], where: str) -> list[str]:
    """One conversation: a prompt, or prompts sent in order."""
    if isinstance(prompts, str):
        return [prompts]
    try:
        items: list[Any] = list(prompts)
    except TypeError:
        items = [prompts]
    if not items or not all(isinstance(p, str) for p in items):
        raise ConfigurationError(
            f"{where} must be a prompt (str) or a non-empty list of prompts, not {prompts!r}"
        )
    return items


def sweep_items(prompts: Any) -> list[Item]:
    """The items of a sweep: each a prompt, a list of prompts, or a dict with `prompt` (or
    `prompts`) and optionally `id`; other keys are kept as the item's metadata."""
    if hasattr(prompts, "to_dict") and not isinstance(prompts, Mapping):  # a DataFrame
        prompts = prompts.to_dict("records")
    if isinstance(prompts, str | Mapping):
        prompts = [prompts]
    items: list[Item] = []
    for index, entry in enumerate(prompts):
        where = f"prompts[{index}]"
        if isinstance(entry, Mapping):
            if "prompt" not in entry and "prompts" not in entry:
                raise ConfigurationError(
                    f"{where} is a dict without 'prompt' (or 'prompts'); give each item "
                    "{'prompt': '...', 'id': ...}"
                )
            text = entry.get("prompts", entry.get("prompt"))
            meta = {k: v for k, v in entry.items() if k not in ("prompt", "prompts", "id")}
            item_id = entry.get("id", index)
            if not isinstance(item_id, str | Integral) or isinstance(item_id, bool):
                refuse(f"{where}['id']", item_id, "a str or an int", where="sn.sweep(...)")
            items.append(Item(item_id, conversation(text, where), meta))
        else:
            items.append(Item(index, conversation(entry, where)))
    if not items:
        raise ConfigurationError("prompts= is empty: give at least one prompt")
    seen: set[Any] = set()
    for item in items:
        if item.id in seen:
            raise ConfigurationError(f"two items have the id {item.id!r}; ids must be unique")
        seen.add(item.id)
    return items
