"""Teaching notebooks: committed clean, and each runs top to bottom in a real kernel."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


def test_all_eight_notebooks_exist() -> None:
    assert [p.stem[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07", "08"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_clean_with_a_kernelspec(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name} has outputs; clear them before committing"
            )
    first, last = nb.cells[0], nb.cells[-1]
    assert first.cell_type == "markdown" and first.source.startswith("# ")
    assert "## Check yourself" in nb.cells[-2].source
    assert "assert" in last.source


@pytest.mark.kernel
@pytest.mark.timeout(180)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,
        store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert "all good" in printed
    widgets = nb.metadata.get("widgets", {})
    assert widgets, "the live view should leave widget state in the notebook"
    promised = PROMISES.get(path.stem[:2])
    if promised is not None:
        promised(nb)


def shown(nb: nbformat.NotebookNode, source: str, mime: str = "text/plain") -> str:
    """What the first code cell whose source holds `source` printed and displayed as `mime`."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and source in c.source)
    return "".join(o.get("text", "") + o.get("data", {}).get(mime, "") for o in cell.outputs)


def _the_result_keeps_the_raw_wire(nb: nbformat.NotebookNode) -> None:
    wire = shown(nb, "for x in result.exchanges]")
    assert "(200, 'user', 'tool_calls')" in wire and "(200, 'tool', 'stop')" in wire


def _the_cli_reports_its_facts_and_cost(nb: nbformat.NotebookNode) -> None:
    facts = shown(nb, 'for k in ("session_id"')
    assert "None" not in facts.splitlines()[0], facts  # every run fact, on the stand-in too
    assert re.search(r"the coder's run cost \$\d+\.\d{4} at list price", facts), facts
    assert facts.count("/v1/messages', 200") == 2  # the CLI's exchanges with the served mock


def _the_replay_keeps_its_wire(nb: nbformat.NotebookNode) -> None:
    assert shown(nb, "for x in replayed.exchanges]").count(", 200)") == 2


def _the_table_shows_the_answers_whole(nb: nbformat.NotebookNode) -> None:
    table = shown(nb, "cmp = sn.compare(", "text/html")
    assert '<table class="sn-compare">' in table
    # the resident's answer, which makes the notebook's point, is shown whole, not cut
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table)
    assert any("The user is called Ada." in cell for cell in cells), cells


def _the_debugging_lesson_shows_each_step(nb: nbformat.NotebookNode) -> None:
    assert "breakpoint: boss/clerk.2/payer.1 pay {'amount': 5000, 'to': 'Mallory'}" in shown(
        nb, "big = sn.when("
    )
    decided = shown(nb, "carol.edit(")
    assert "decided: [('boss/clerk.4', 'edit'), ('boss/clerk.3', 'approve')]" in decided
    assert "the boss read: Done: clerk: paid 20 € to Dave, receipt checked" in shown(
        nb, "answer.edit("
    )
    forked = shown(nb, "fork = session.fork(")
    assert "asked again: {'boss': 1}" in forked and "stops: [('boss/clerk.5', 'model')" in forked
    diff = shown(nb, "found = sn.diff(", "text/html")
    assert "first diverging event" in diff and "Dave asked to be paid next month" in diff
    assert "4 passed" in shown(nb, "session.to_test(")


PROMISES = {
    "01": _the_result_keeps_the_raw_wire,
    "05": _the_debugging_lesson_shows_each_step,
    "06": _the_cli_reports_its_facts_and_cost,
    "07": _the_replay_keeps_its_wire,
    "08": _the_table_shows_the_answers_whole,
}
"""What each notebook's text promises, checked in what it showed (issue 30, item 14)."""
