"""ggml's own kernels in sweeps (issue 15): the planner drops the points where a -tiled kernel
cannot run with one line per kernel, gives ggml's kernels no tunable, runs them from their
own binaries; the shipped specs plan as documented; sweeps/qemu-ggml.yaml runs end to end
on the real binaries under QEMU and its report lists what ran."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sweeps.plan import build_plan
from sweeps.spec import SCHEMA_FILE, SpecError, load_spec
from sweeps.tests.conftest import ROOT, Fakes
from sweeps.tests.test_specs import plan_of
from workloads.kernels import KERNELS

BUILD = ROOT / "workloads" / "build"
BASE: dict[str, Any] = {
    "name": "t", "target": "qemu",
    "axes": {"vlen": [128, 256], "kernel": ["ggml-lib-vec-tiled", "ggml-lib-vec", "fa-v"],
             "model": ["tinyllama-1.1b"], "phase": ["prefill", "decode"], "n": [16, 64],
             "l": [32]}}


def test_tiled_points_where_ggml_does_not_tile_are_dropped(tmp_path: Path) -> None:
    plan = plan_of(BASE, tmp_path)
    tiled = [p for p, _ in plan.points if p["kernel"] == "ggml-lib-vec-tiled"]
    assert [(p["phase"], p["n"]) for p in tiled] == [("prefill", 64)] * 2  # two VLENs
    others = [p for p, _ in plan.points if p["kernel"] != "ggml-lib-vec-tiled"]
    assert len(others) == 2 * 2 * 2 * 2  # kernels x VLENs x phases x n (decode: n unused)
    notes = [w for w in plan.warnings if "dropped" in w]
    assert notes == [f"{tmp_path / 's.yaml'}: axes.kernel: ggml-lib-vec-tiled: 6 points "
                     "dropped where it cannot run (ggml tiles only prefill with n >= 64)"]


def test_a_plan_left_without_points_says_why(tmp_path: Path) -> None:
    body = {**BASE, "axes": {**BASE["axes"], "kernel": ["ggml-lib-scalar-tiled"],
                             "n": [16]}}
    with pytest.raises(SpecError) as e:
        plan_of(body, tmp_path)
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(str(tmp_path / "s.yaml")), msg
    assert msg.endswith("no point left to run: axes.kernel: ggml-lib-scalar-tiled: 4 points "
                        "dropped where it cannot run (ggml tiles only prefill with n >= 64)")


def test_ggml_kernels_get_no_tunable_and_their_own_binaries(tmp_path: Path) -> None:
    """fa-v's and ggml-vec's tunables are not passed to ggml's own kernels (their workloads
    refuse them), so their runs are shared across those axes; the scalar ones across VLEN."""
    body = {**BASE, "axes": {**BASE["axes"], "lmul": [1, 2], "regime": ["auto", "rows"],
                             "kernel": [k for k in KERNELS if KERNELS[k].ggml_path and
                                        KERNELS[k].family.name == "attention"]}}
    plan = plan_of(body, tmp_path)
    for r in plan.runs.values():
        args, binary = r.run_json["workload"]["args"], r.run_json["workload"]["binary"]
        assert "--lmul" not in args and "--regime" not in args
        assert binary == ("attention-ggml-lib" if KERNELS[r.kernel].vector
                          else "attention-ggml-lib-scalar")
    per = {k: sum(r.kernel == k for r in plan.runs.values()) for k in body["axes"]["kernel"]}
    # prefill n=16, n=64, decode: x2 VLENs for vector kernels; tiled only prefill n=64
    assert per == {"ggml-lib-vec": 6, "ggml-lib-vec-onerow": 6, "ggml-lib-vec-tiled": 2,
                   "ggml-lib-scalar": 3, "ggml-lib-scalar-onerow": 3,
                   "ggml-lib-scalar-tiled": 1}


def test_shipped_ggml_specs(monkeypatch: pytest.MonkeyPatch) -> None:
    """sweeps/ggml.yaml: what its header says (168 runs, no point dropped); qemu-ggml: every
    ggml kernel of the registry."""
    monkeypatch.setenv("GEM5", str(SCHEMA_FILE))
    spec, path, _ = load_spec("ggml")
    plan = build_plan(spec, str(path))
    assert spec.target == "gem5" and len(plan.runs) == 168
    assert not [w for w in plan.warnings if "dropped" in w]
    assert {r.axes["vlen"] for r in plan.runs.values()} == {512, 2048, 8192, None}
    spec, path, _ = load_spec("qemu-ggml")
    assert {k for k in KERNELS if KERNELS[k].ggml_path} <= set(spec.axes.kernel)


@pytest.mark.skipif(not (BUILD / "attention-ggml-lib").exists(),
                    reason="workloads/build/attention-ggml-lib missing: run `make workloads`")
@pytest.mark.skipif(shutil.which("qemu-riscv64") is None, reason="qemu-riscv64 not installed")
def test_qemu_ggml_end_to_end(fakes: Fakes) -> None:
    fakes.use_real_workloads()
    r = fakes.cli("run", "qemu-ggml", "--results", str(fakes.results), "-j", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("points dropped where it cannot run") == 2, r.stdout
    sts = fakes.statuses("qemu-ggml")
    assert len(sts) == 31
    paths = {}
    for rid, v in sts.items():
        assert v["status"]["status"] == "ok", (rid, v["status"])
        res = json.loads((fakes.results / "qemu-ggml" / "runs" / rid / "result.json")
                         .read_text())
        k = KERNELS[res["kernel"]]
        assert res["pass"] is True and res["kernel"] == v["run"]["axes"]["kernel"]
        if k.ggml_path and k.family.name == "attention":
            assert res["ggml_path_asked"] == k.ggml_path
            paths[(k.name, res["phase"])] = res["ggml_path"]
    assert paths[("ggml-lib-vec", "prefill")] == paths[("ggml-lib-scalar", "prefill")] == \
        "tiled"
    assert paths[("ggml-lib-vec", "decode")] == "one-row"  # 16 keys: no key split
    rep = subprocess.run([sys.executable, "-m", "analysis", "report",
                          str(fakes.results / "qemu-ggml")], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert rep.returncode == 0, rep.stderr
    html = (fakes.results / "qemu-ggml" / "report.html").read_text()
    assert "ok 31 of 31 planned runs" in html
    checks = html[html.index("<h2>Workload self-checks"):]
    assert "<th>ggml_path</th>" in checks and "<td>ggml-lib-vec-tiled</td>" in checks
    for title in ("<h2>Our ports vs ggml", "<h2>FA-V vs ggml"):  # no cycles on QEMU
        assert "<em>no data</em>" in html[html.index(title):][:400]
