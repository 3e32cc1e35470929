"""The harness package's public surface is exactly its `__all__`, sorted constants first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sagents_nb.harness as harness


def test_all_is_sorted_and_complete():
    public = {name for name in vars(harness) if not name.startswith("_")}
    assert harness.__all__ == sorted(harness.__all__, key=lambda n: (not n.isupper(), n))
    assert set(harness.__all__) == public


def test_importing_the_package_leaves_the_mcp_sdk_unloaded():
    probe = "import sys, sagents_nb.harness; print('mcp' in sys.modules, 'uvicorn' in sys.modules)"
    root = Path(__file__).parents[2]
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=root
    )
    assert out.stdout.split() == ["False", "False"]
