"""`python -m sweeps.one` rejects bad input with one line before gem5 starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CASES = [
    (["nope", "2048", "16"], "nope"),
    (["vitruvius-plus", "3000", "16"], "vlen"),
    (["vitruvius-plus", "65536", "16"], "vlen"),
    (["vitruvius-plus", "2048", "0"], "lanes"),
    (["paper-vl-scaled", "16384", "8"], "vlen"),
    (["vitruvius-plus", "2048", "x"], "lanes"),
    (["vitruvius-plus", "2048", "16"], "GEM5"),
]


@pytest.mark.parametrize("argv, needle", CASES)
def test_bad_input_one_line(argv: list[str], needle: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GEM5"}
    proc = subprocess.run([sys.executable, "-m", "sweeps.one", *argv, "--", "--kernel", "fa-v"],
                          capture_output=True, text=True, env=env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], lines


def test_gem5_that_is_not_gem5(tmp_path) -> None:
    fake = tmp_path / "gem5.opt"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "sweeps.one", "vitruvius-plus", "2048", "16",
                           "--", "--kernel", "fa-v"], capture_output=True, text=True,
                          env={**os.environ, "GEM5": str(fake)})
    assert proc.returncode == 2 and "not a usable gem5" in proc.stderr
