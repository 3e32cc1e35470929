"""Script-aware text measures: a token estimate and the terms relevance scoring matches on.

Neither is a real tokenizer. The estimate lands within about 0.8-1.4x of OpenAI's cl100k_base and
o200k_base counts for English, French, German, Spanish, Russian, Chinese, Japanese, Korean, emoji
and code (the table is in tests/test_text.py); pass `sn.Session(token_counter=...)` for exact
counts from a real tokenizer.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata


def counted(count: int | str, one: str, many: str | None = None) -> str:
    """`count` and its noun, singular for exactly one: `1 turn`, `2 turns`, `0 turns` (the
    view's rule: `notebook/_words.py`)."""
    return f"{count} {one if str(count) == '1' else many or one + 's'}"


_PUNCTUATION_ONLY = str.maketrans("", "", string.ascii_letters + string.digits + " \t\n\r")
"""Deletes ASCII letters, digits and spaces: what is left of ASCII text is its punctuation."""

_WIDE = (
    "[\u0900-\u0dff\u0e00-\u0e7f\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff"
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]"
)
"""Scripts a tokenizer spends about a token a character on: Indic, Thai, CJK, kana, Hangul."""

_SYMBOL = "[\u2190-\u2bff\U0001f000-\U0001faff]"
"""Arrows, dingbats and emoji: about two tokens each."""

_UNSPACED = "([\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+)"
"""Runs of scripts written without spaces between words: Chinese, Japanese kana, Korean."""

_IDEOGRAPH = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
"""Han characters: one is a word on its own (猫, 水), so each is a term besides its pairs."""

_SKIN_TONE = "[\U0001f3fb-\U0001f3ff]"
"""Emoji modifiers: 👍🏽 and 👍 are the same term."""


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled on first use: the wide Unicode classes are slow to compile at import."""
    return re.compile(pattern)


def estimate_text_tokens(text: str) -> int:
    """About how many tokens `text` is for a GPT-style tokenizer.

    ASCII costs a token per four characters, punctuation (frequent in code and JSON) about twice
    that; other letters (accented Latin, Cyrillic, Greek, Arabic...) half a token each; CJK, kana,
    Hangul and Indic scripts a token each; emoji two.
    """
    size = len(text)
    if text.isascii():
        return (size + len(text.translate(_PUNCTUATION_ONLY))) // 4
    ascii_size = len(text.encode("ascii", "ignore"))
    other = size - ascii_size
    wide = _compiled(_WIDE).subn("", text)[1]
    symbols = _compiled(_SYMBOL).subn("", text)[1]
    punctuation = len(text.translate(_PUNCTUATION_ONLY)) - other
    return int((ascii_size + punctuation) / 4 + wide + 2 * symbols + (other - wide - symbols) / 2)


_WORD = re.compile(r"\w+")

STOP_WORDS = frozenset(
    # English
    "the and for are but not you all any can had her was one our out has him his how its may new "
    "now old see two who did get let put say she too use that with this from they will what when "
    "your have been were which their there then them than into more some such only also just "
    "to of in is it an as at be by do if no on or so up we my me he us am "
    # French, Spanish, German: the commonest articles, pronouns and particles
    "le la les de des du un une et est en que qui pour dans sur pas par au aux ce il elle ne se "
    "el los las del con por una es su al lo der die das und ist ein eine nicht mit den zu im".split()
)
"""Words too common to say what a text is about; two-letter words beyond these (db, io) count."""


def fold(word: str) -> str:
    """`word` without accents: "résumé" -> "resume", so either spelling matches the other."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def terms(text: str) -> frozenset[str]:
    """The terms of `text` for lexical matching, in any script.

    Words are Unicode words, case- and accent-folded, of two characters or more, less the
    `STOP_WORDS`; an identifier such as `read_file` also gives its parts. Text written without
    spaces (Chinese, Japanese, Korean) gives overlapping character pairs, the usual way to match
    it without a dictionary, and each Han character (one is often a word: 猫). Each emoji or
    pictograph is a term too (🍕), skin tones aside.
    """
    found: set[str] = set()
    normalised = unicodedata.normalize("NFKC", text).casefold()
    words = _WORD.findall(normalised)
    if not normalised.isascii():
        found.update(_compiled(_SYMBOL).findall(_compiled(_SKIN_TONE).sub("", normalised)))
        words = _spaced_words(words, found)
    for word in words:  # ASCII: no script without spaces, no accent to fold
        if "_" in word:
            parts = [word, *word.split("_")] if "_" in word.strip("_") else [word.strip("_")]
            found.update(p for p in parts if len(p) >= 2 and p not in STOP_WORDS)
        elif len(word) >= 2 and word not in STOP_WORDS:
            found.add(word)
    return frozenset(found)


def _spaced_words(words: list[str], found: set[str]) -> list[str]:
    """`words` cut where a script written without spaces begins or ends, accents folded; the
    runs of those scripts go to `found` as their character pairs (and Han characters)."""
    unspaced = _compiled(_UNSPACED)
    kept: list[str] = []
    for word in words:
        for piece in unspaced.split(word):
            if not piece:
                continue
            if unspaced.fullmatch(piece):
                found.update(piece[i : i + 2] for i in range(max(1, len(piece) - 1)))
                found.update(_compiled(_IDEOGRAPH).findall(piece))
            else:
                kept.append(fold(piece))
    return kept
