"""Sweeps on the gem5 that `make gem5` built (system/gem5find.py): resolved once by the
driver, recorded in provenance, and a different binary means new run ids."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from sweeps.tests.conftest import FAKE_GEM5, Fakes, _exe
from system import gem5find
from system.tests.test_gem5find import fake_build


def test_sweep_runs_on_the_build_without_gem5_exported(fakes: Fakes, tmp_path: Path) -> None:
    """The driver resolves the build once; cmd.sh and every run use it, and provenance
    records the stamp's series and commit."""
    binary = fake_build(tmp_path / "b", text=FAKE_GEM5)
    del fakes.env["GEM5"]
    fakes.env["GEM5_BUILD_DIR"] = str(tmp_path / "b")
    spec = fakes.spec("g5b", target="gem5", axes={
        "uarch": ["vitruvius-plus"], "vlen": [512], "lanes": [8], "kernel": ["fa-v"],
        "model": ["tinyllama-1.1b"], "phase": ["prefill"], "n": [4]})
    r = fakes.cli("run", str(spec), "--results", str(fakes.results))
    assert r.returncode == 0, r.stdout + r.stderr
    (v,) = fakes.statuses("g5b").values()
    assert v["status"]["status"] == "ok"
    prov = v["status"]["provenance"]
    assert prov["gem5_series"] == gem5find.series_hash()
    assert prov["gem5_commit"] == "b1a44b89c7bae73fae2dc547bc1f871452075b85"
    assert prov["gem5_sha256"] == hashlib.sha256(binary.read_bytes()).hexdigest()
    cmd = (fakes.results / "g5b" / "runs" / v["run"]["id"] / "cmd.sh").read_text()
    assert str(binary) in cmd
    sweep = json.loads((fakes.results / "g5b" / "provenance.json").read_text())
    assert sweep["gem5"] == str(binary) and sweep["gem5_series"] == gem5find.series_hash()


def test_another_gem5_binary_is_said_to_rerun_everything(fakes: Fakes, tmp_path: Path) -> None:
    """Run ids include the gem5 binary's hash: planning a run sweep with another binary
    warns that its runs are not reused."""
    spec = fakes.spec("g5c", target="gem5", axes={
        "uarch": ["paper-fixed"], "vlen": [512], "lanes": [8], "kernel": ["fa-v"],
        "model": ["tinyllama-1.1b"], "phase": ["prefill"], "n": [4]})
    r = fakes.cli("run", str(spec), "--results", str(fakes.results))
    assert r.returncode == 0, r.stdout + r.stderr
    same = fakes.cli("plan", str(spec), "--results", str(fakes.results))
    assert "not reused" not in same.stdout + same.stderr and "done 1" in same.stdout
    fakes.env["GEM5"] = str(_exe(tmp_path / "other-gem5.opt", FAKE_GEM5 + "# rebuilt\n"))
    other = fakes.cli("plan", str(spec), "--results", str(fakes.results))
    assert other.returncode == 0, other.stderr
    assert "its runs are not reused (new run ids)" in other.stdout and "done 0" in other.stdout
