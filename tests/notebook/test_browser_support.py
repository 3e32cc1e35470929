"""The browser set-up the browser tests and `benchmarks/view_browser.py` share: it leaves no
process behind, and under CI a missing chromium fails the browser tests instead of skipping them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks import _browser
from benchmarks._browser import alive, chromium, descendants, jupyter_lab, open_notebook, run_cell

from .conftest import _require_chromium, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.timeout(120)]


def test_lab_its_kernel_and_chromium_are_gone_afterwards(tmp_path: Path) -> None:
    _require_chromium()
    with jupyter_lab(tmp_path, timeout=30) as lab, chromium() as browser:
        page = browser.new_page()
        open_notebook(page, lab.notebook("prêt.ipynb", "print('prêt — 準備 ✓ 🚀')"))
        run_cell(page, 0)
        page.locator(".jp-OutputArea-output", has_text="prêt — 準備 ✓ 🚀").wait_for()
        # Lab and its kernel, Playwright's driver, chromium and its helpers
        started = descendants(os.getpid())
        assert lab.process.pid in started and len(started) >= 4, started
    wait_until(lambda: not [pid for pid in started if alive(pid)], timeout=15, what="no process")


@pytest.mark.parametrize(
    ("ci", "outcome"), [("true", pytest.fail.Exception), ("", pytest.skip.Exception)]
)
def test_a_missing_chromium_fails_under_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ci: str, outcome: type[BaseException]
) -> None:
    monkeypatch.setattr(_browser, "CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="no-chromium"):
        _require_chromium()
