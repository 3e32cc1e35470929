"""Sessions the saved-file tests write (`save_html`): a delegating run with tool calls, in
French, Chinese, Japanese and emoji, with markup a model might send, and one of 1,000 events."""

from __future__ import annotations

import itertools
from typing import Any

import sagents_nb as sn

from .conftest import XSS

WORDS = "Réponse — 回答 — 答え 🎉 </script><script>window.__xss=3</script> \u2028 & <b>gras</b>"


@sn.tool
def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: the word.
    """
    return f"« {word} » : défini — 定義 — 定義 ✅ {XSS}"


def delegating_session(children: int = 2, turns: int = 3, **options: Any) -> sn.Session:
    """A coordinator that hands `children` tasks to `explore`, each doing `turns` tool calls."""
    counters: dict[str, itertools.count[int]] = {}

    def handler(request: sn.ChatRequest) -> Any:
        if "task" in request.tools:
            done = sum(1 for m in request.messages if m.get("role") == "tool")
            if done < children:
                return sn.reply(
                    tool_calls=[
                        sn.call(
                            "task",
                            agent="explore",
                            prompt=f"lis le chapitre {done} — 第{done}章 📖",
                        )
                    ]
                )
            return f"Réponse finale : tout va bien ✅ {WORDS}"
        asked = next(m for m in request.messages if m.get("role") == "user")
        count = counters.setdefault(str(asked.get("content")), itertools.count())
        n = next(count)
        if n < turns:
            return sn.reply(
                f"je cherche {n} — 探す {WORDS}",
                tool_calls=[sn.call("lookup", word=f"mot {n} 言葉")],
            )
        return f"résumé du chapitre — 要約 🎌 {WORDS}"

    explore = sn.Agent("explore", does="lit les chapitres — 読む", tools=[lookup])
    coordinator = sn.Agent("coordinator", does="délègue — 任せる", team=[explore])
    return sn.Session(coordinator, llm=sn.mock_llm(handler), **options)


def finished(session: sn.Session, text: str = "Qu’y a-t-il ? 何がある？ 🤔") -> sn.Session:
    assert session.send(text).wait(timeout=60) == "done"
    return session


def thousand_events() -> sn.Session:
    """A finished session of about 1,000 events: 8 children of 12 tool turns each."""
    return finished(delegating_session(children=8, turns=12))
