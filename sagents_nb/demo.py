"""`python -m sagents_nb.demo`: a scripted delegation tree on the built-in mock endpoint, no key needed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sagents_nb as sn
from sagents_nb._runtime.trace import describe

if TYPE_CHECKING:
    from sagents_nb._endpoints.mock import Reply


@sn.tool
def read_file(path: str) -> str:
    """Read a (pretend) file.

    Args:
        path: which file.
    """
    return {"README.md": "# demo project", "setup.py": "setup(name='demo')"}.get(
        path, "no such file"
    )


def coordinator_turn(req: sn.ChatRequest) -> Reply | str:
    """The coordinator fans out, then repeats one task (reattach) and asks a stranger (refused)."""
    done = len(req.tool_results)
    if done == 0:
        return sn.reply(
            tool_calls=[
                sn.call("task", agent="explore", prompt="What is in README.md?"),
                sn.call("task", agent="review", prompt="Review setup.py"),
            ]
        )
    if done == 2:
        return sn.reply(
            tool_calls=[
                sn.call("task", agent="explore", prompt="What is in README.md?"),
                sn.call("task", agent="deploy", prompt="Ship it"),
            ]
        )
    return "Summary: " + " / ".join(r[:40] for r in req.tool_results[:2])


def child_turn(req: sn.ChatRequest) -> Reply | str:
    """Children read one file, then answer."""
    if not req.tool_results:
        path = "README.md" if "README" in req.last_user else "setup.py"
        return sn.reply(tool_calls=[sn.call("read_file", path=path)])
    return f"{req.last_user} -> found {req.tool_results[-1]!r}"


def handler(req: sn.ChatRequest) -> Reply | str:
    return coordinator_turn(req) if "task" in req.tools else child_turn(req)


def main() -> None:
    explore = sn.Agent("explore", does="reads files and reports", tools=[read_file])
    review = sn.Agent("review", does="reviews code", tools=[read_file])
    coordinator = sn.Agent(
        "coordinator",
        does="plans and delegates",
        team=[explore, review],
        instructions="Delegate reading to your team, then summarise.",
    )
    session = sn.Session(coordinator, llm=sn.mock_llm(handler))
    session.subscribe(lambda event: print(describe(event)) if event.seq else None)
    result = session.send("Survey the project").result()
    print("\nDelegation tree:\n" + result.tree.render())
    print(f"\n[{result.status}] {result.text}")
    print(
        f"{len(result.events)} events, {result.usage.total_tokens} tokens, "
        f"{len(session.llm.exchanges)} model calls"
    )


if __name__ == "__main__":
    main()
