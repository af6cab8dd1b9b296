"""`python -m tools.one` rejects bad input with one line before gem5 starts."""

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
    (["vitruvius-plus", "2048", "16", "--stack-shift", "8"], "--stack-shift: expected a "
     "multiple of 16"),
]


@pytest.mark.parametrize("argv, needle", CASES)
def test_bad_input_one_line(argv: list[str], needle: str, tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GEM5"}
    env["GEM5_BUILD_DIR"] = str(tmp_path / "no-build")  # not this machine's `make gem5` build
    proc = subprocess.run([sys.executable, "-m", "tools.one", *argv, "--", "--kernel", "fa-v"],
                          capture_output=True, text=True, env=env)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], lines


def test_gem5_that_is_not_gem5(tmp_path) -> None:
    fake = tmp_path / "gem5.opt"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "tools.one", "vitruvius-plus", "2048", "16",
                           "--", "--kernel", "fa-v"], capture_output=True, text=True,
                          env={**os.environ, "GEM5": str(fake)})
    assert proc.returncode == 2 and "not a usable gem5" in proc.stderr


FAKE_GEM5 = """#!/bin/sh
# Stands in for gem5.opt: answers the info query, or "simulates" by writing what run.py would.
case "$*" in *gem5_info.py*)
  echo 'VECSCALE_GEM5_INFO {"version": "24.0.0.1", "isas": ["RISCV"], "patched": true}'
  exit 0;;
esac
for a in "$@"; do case "$a" in --outdir=*) out="${a#--outdir=}";; esac; done
grep -q '"fa-v"' "$out/run.json" || exit 3
echo '{"workload": "attention", "kernel": "fa-v", "pass": true}' > "$out/simout"
B='---------- Begin Simulation Statistics ----------'
E='---------- End Simulation Statistics   ----------'
S="$out/stats.txt"
printf '\\n%s\\nsystem.cpu.numCycles 12345 # cycles\\n\\n%s\\n' "$B" "$E" > "$S"
printf '\\n%s\\nsystem.cpu.numCycles 99999 # cycles\\n\\n%s\\n' "$B" "$E" >> "$S"
echo '{"exit_code": 0, "cause": "exiting"}' > "$out/workload_exit.json"
"""


def test_success_path_prints_result_and_roi_cycles(tmp_path) -> None:
    fake = tmp_path / "gem5.opt"
    fake.write_text(FAKE_GEM5)
    fake.chmod(0o755)
    proc = subprocess.run(
        [sys.executable, "-m", "tools.one", "vitruvius-plus", "2048", "16", "--results",
         str(tmp_path / "res"), "--", "--kernel", "fa-v", "--model", "tinyllama-1.1b"],
        capture_output=True, text=True, env={**os.environ, "GEM5": str(fake)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"pass": true' in proc.stdout
    assert "ROI cycles: 12345" in proc.stdout  # dump 1, not the exit dump
    (rundir,) = (tmp_path / "res").iterdir()
    run = __import__("json").loads((rundir / "run.json").read_text())
    assert run["system"]["vlen"] == 2048 and run["workload"]["args"][-2:] == ["--roi", "m5"]


def test_gem5_from_an_older_patch_series(tmp_path) -> None:
    """A binary with some of the patch's params but not all was built from an older series."""
    fake = tmp_path / "gem5.opt"
    fake.write_text(
        "#!/bin/sh\necho 'VECSCALE_GEM5_INFO {\"version\": \"24.0.0.1\", \"isas\": [\"RISCV\"], "
        "\"patched\": true, \"missing_params\": [\"vecTimingUnitQueue\"]}'\n")
    fake.chmod(0o755)
    proc = subprocess.run([sys.executable, "-m", "system.gem5check"], capture_output=True,
                          text=True, env={**os.environ, "GEM5": str(fake)})
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "older gem5-patches/ series" in lines[0] and "vecTimingUnitQueue" in lines[0]
