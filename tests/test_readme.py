"""The README keeps its first lines, gives the live view its own section (its picture and every
tab of the view in a sentence) and lists the notebooks in order."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
TABS_JS = ROOT / "sagents_nb" / "notebook" / "static" / "panes" / "tabs.js"


def section(title: str) -> str:
    (text,) = re.findall(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", README, re.M | re.S)
    return text


def test_the_readme_begins_with_the_two_set_up_commands() -> None:
    assert README.splitlines()[:6] == [
        "# sagents_nb",
        "",
        "```",
        "make demo    # builds .venv, runs a scripted delegation tree on the built-in mock "
        "endpoint (no key)",
        "make test    # builds .venv, runs ruff and the whole test suite (kernels, a real "
        "browser, CLIs)",
        "```",
    ]


def test_the_view_has_a_section_with_its_picture_and_a_sentence_per_tab() -> None:
    view = section("The live view")
    (picture,) = re.findall(r"!\[[^\]]+\]\(([^)]+)\)", view)
    assert (ROOT / picture).is_file()
    labels = re.findall(r'\["\w+", "([^"]+)"\]', TABS_JS.read_text(encoding="utf-8"))
    assert len(labels) >= 8
    for label in labels:
        assert re.search(rf"^- \*\*{re.escape(label)}\*\*: \S", view, re.M), label
    for also in ("Fork here", "cmp.view(", "Approve", "Step"):
        assert also in view, also


def test_the_notebooks_are_a_numbered_path_in_their_order() -> None:
    listed = re.findall(r"^(\d)\. `(\d\d_\w+)`: \S", section("Notebooks"), re.M)
    stems = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert [stem for _, stem in listed] == stems
    assert [int(n) for n, _ in listed] == list(range(1, len(stems) + 1))
