"""Counts in the view read right for one: "1 node", "1 turn" (one rule, in Python and in the
front end), and no text of the view spells a count's noun by hand."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from sagents_nb.notebook._view_module import STATIC
from sagents_nb.notebook._words import counted

NOTEBOOK = STATIC.parent
NOUNS = "nodes|turns|tokens|messages|items|calls|events|pauses|exchanges|points|groups|denials"


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert counted(1, "node") == "1 node"
    assert counted(0, "node") == "0 nodes"
    assert counted(2, "turn") == "2 turns"
    assert counted("1", "token") == "1 token"
    assert counted("4.2 k", "token") == "4.2 k tokens"
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"
    assert counted(1, "message envoyé", "messages envoyés") == "1 message envoyé"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the front end's rule")
def test_the_front_end_counts_by_the_same_rule(tmp_path: Path) -> None:
    module = tmp_path / "words.mjs"
    shutil.copy(STATIC / "panes" / "words.js", module)
    cases = [[1, "node"], [0, "node"], [2, "turn"], ["1", "token"], ["4.2 k", "token"]]
    cases += [[1, "entry", "entries"], [5, "entry", "entries"], [1, "メッセージ", "メッセージ"]]
    script = (
        f"import {{ counted }} from {json.dumps(module.as_uri())};"
        f"console.log(JSON.stringify({json.dumps(cases)}.map((c) => counted(...c))));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == [counted(*case) for case in cases]


def test_no_text_of_the_view_spells_a_count_by_hand() -> None:
    by_hand = re.compile(r"\$\{[^{}`]*\} (?:" + NOUNS + r")\b(?!=)|\w\(s\)")
    found = []
    for path in [*STATIC.rglob("*.js"), *NOTEBOOK.glob("*.py")]:
        if path.name == "lit-html.js":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            python_count = path.suffix == ".py" and re.search(
                r"\{[^{}]*\} (?:" + NOUNS + r")\b", line
            )
            if by_hand.search(line) or python_count:
                found.append(f"{path.relative_to(NOTEBOOK)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
