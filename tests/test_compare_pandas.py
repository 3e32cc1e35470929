"""Results as data: a comparison's or a sweep's table as a pandas DataFrame (one row per item x
variant, the table's columns with reused/why), pandas an optional extra never imported by
`import sagents_nb`."""

from __future__ import annotations

import subprocess
import sys

import pytest

import sagents_nb as sn
from sagents_nb._compare.table import COLUMNS

pandas = pytest.importorskip("pandas")


def echo(req: sn.ChatRequest) -> str:
    return f"{req.model}: {req.last_user}"


def test_a_sweep_as_a_dataframe_has_a_row_per_item_and_variant(tmp_path) -> None:
    items = [{"id": "fr", "prompt": "thé 🍵"}, {"id": "zh", "prompt": "茶"}]
    variants = {"petit": {"model": "s"}, "grand": {"model": "l"}}
    store = tmp_path / "sweep.db"
    sn.sweep(sn.Agent("solo"), items[:1], variants, llm=sn.mock_llm(echo), store=store)
    cmp = sn.sweep(
        sn.Agent("solo"), items, variants, llm=sn.mock_llm(echo), store=store, progress=False
    )
    frame = cmp.to_pandas()
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 4
    assert list(zip(frame["item"], frame["variant"], strict=True)) == [
        ("fr", "petit"),
        ("fr", "grand"),
        ("zh", "petit"),
        ("zh", "grand"),
    ]
    assert list(frame["answer"]) == ["s: thé 🍵", "l: thé 🍵", "s: 茶", "l: 茶"]
    assert list(frame["reused"]) == [True, True, False, False]
    assert frame["why"].isna().all() and (frame["status"] == "done").all()
    assert frame.to_dict("records") == cmp.rows


def test_a_compare_as_a_dataframe_says_why_a_stored_run_was_not_reused(tmp_path) -> None:
    store = tmp_path / "runs.db"
    sn.compare(
        sn.Agent("solo"), "salut", {"v": {"model": "old"}}, llm=sn.mock_llm(echo), store=store
    )
    cmp = sn.compare(
        sn.Agent("solo"), "salut", {"v": {"model": "new"}}, llm=sn.mock_llm(echo), store=store
    )
    frame = cmp.to_pandas()
    assert frame.loc[0, "answer"] == "new: salut" and frame.loc[0, "why"] == "changed: variant"
    assert not frame.loc[0, "reused"]


def test_without_pandas_the_error_names_the_extra(monkeypatch) -> None:
    cmp = sn.compare(sn.Agent("solo"), "salut", llm=sn.mock_llm(echo))
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` fails as if not installed
    with pytest.raises(ImportError, match=r"pip install 'sagents_nb\[pandas\]'.*\.rows"):
        cmp.to_pandas()
    assert cmp.rows[0]["answer"] == "mock: salut"  # the table is still there as dicts


def test_import_and_a_sweep_never_import_pandas() -> None:
    code = (
        "import sys, sagents_nb as sn\n"
        "cmp = sn.sweep(sn.Agent('solo'), ['a', 'ü'], {'x': {}, 'y': {}}, "
        "llm=sn.mock_llm(lambda req: 'ok'), progress=False)\n"
        "assert [r['answer'] for r in cmp.rows] == ['ok'] * 4\n"
        "str(cmp); cmp._repr_mimebundle_()\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]
