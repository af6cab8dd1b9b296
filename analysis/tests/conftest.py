"""Fixtures of the analysis tests. analysis/tests is a package (it has __init__.py) so that
this conftest is imported as analysis.tests.conftest and does not shadow the top-level
`conftest` module that other test folders import from; the builders are in
synthetic_sweep.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.tests.synthetic_sweep import build_sweep


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    return build_sweep(tmp_path / "results" / "synthetic")
