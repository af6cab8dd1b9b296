"""sweeps/README.md's fault table is the one the fault-injection tests' cases give."""

from __future__ import annotations

from sweeps.tests.faults import README, refresh


def test_fault_table_is_current() -> None:
    text = README.read_text()
    assert refresh(text) == text, ("sweeps/README.md: the fault table is stale: run "
                                   "`python -m sweeps.tests.faults --write`")
