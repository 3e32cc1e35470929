"""Sessions the saved-file tests write (`save_html`): a delegating run with tool calls, in
French, Chinese, Japanese and emoji, with markup a model might send, and one of 1,000 events."""

from __future__ import annotations

import itertools
import random
from typing import Any

import sagents_nb as sn

from .conftest import XSS

VOCABULARY = (
    "le chat dort sur le canapé pendant que la pluie tombe 猫は窓の外を見ている 雨が降っています "
    "我们今天学习新的知识 def parse(text): return text.split() 🐍 🚀 ✅ la réponse dépend du contexte "
    "the tool returned 42 rows with status ok l'équipe a corrigé le bogue バグを直した 修复了错误"
).split()


def prose(seed: str, words: int = 60) -> str:
    """Text that differs from one reply to the next, as a model's does (seeded: reproducible)."""
    pick = random.Random(seed)
    return " ".join(pick.choice(VOCABULARY) for _ in range(words))


WORDS = "Réponse — 回答 — 答え 🎉 </script><script>window.__xss=3</script> \u2028 & <b>gras</b>"


@sn.tool
def lookup(word: str) -> str:
    """Look a word up.

    Args:
        word: the word.
    """
    return f"« {word} » : défini — 定義 — 定義 ✅ {XSS}"


def delegating_session(
    children: int = 2, turns: int = 3, *, varied: bool = False, **options: Any
) -> sn.Session:
    """A coordinator that hands `children` tasks to `explore`, each doing `turns` tool calls
    (`varied`: each reply with prose of its own besides)."""
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
    """A finished session of over 1,000 events: 27 children of 6 turns each, every reply with
    prose of its own."""
    session = finished(delegating_session(children=27, turns=6, varied=True))
    assert len(session.events) >= 1000, len(session.events)
    return session
