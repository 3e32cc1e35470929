"""Teaching notebooks: committed clean, and each runs top to bottom in a real kernel."""

from __future__ import annotations

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
