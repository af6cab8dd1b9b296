"""gem5-side tests: skipped with a reason without a patched gem5 ($GEM5, else `make gem5`'s)."""

from __future__ import annotations

import pytest

from system.gem5check import Gem5Error, check


@pytest.fixture(scope="session")
def gem5() -> dict:
    try:
        return check()
    except Gem5Error as e:
        pytest.skip(f"needs a patched gem5 v24.0.0.1 RISCV build: {e}")
