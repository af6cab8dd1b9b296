from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis import cycles, runs, speedup, studies, synth
from analysis.__main__ import main
from analysis.collect import CollectError, collect
from analysis.tests.synthetic_sweep import attn_axes, attn_result, write_run


def _row(df: pd.DataFrame, rid: str) -> dict:
    r = df[df["id"] == rid]
    assert len(r) == 1, rid
    return r.iloc[0].to_dict()


def test_one_row_per_run_with_axes_and_metrics(sweep: Path) -> None:
    df = collect(sweep).df
    assert len(df) == 14
    r = _row(df, "fav-1024-16")
    assert r["status"] == "ok" and r["usable"]
    assert r["kernel"] == "fa-v" and r["vlen"] == 1024 and r["lanes"] == 16
    assert r["model"] == "tinyllama-1.1b" and r["phase"] == "prefill"
    assert r["cycles"] == 2_500_000
    assert r["insts"] == 1_250_000
    assert r["vec_uops_SimdFloatMultAcc"] == 100
    assert r["sim_seconds"] == pytest.approx(2_500_000 * 500 / 1e12)
    # prefill FLOPs: 4 * heads * D * N(N+1)/2 = 4 * 32 * 64 * 64*65/2
    assert r["flops"] == 4 * 32 * 64 * (64 * 65 / 2)
    assert r["flop_per_cycle"] == pytest.approx(r["flops"] / 2_500_000)
    # peak: lanes * 64 / 32 * 2 = 64 FLOP/cycle for 16 lanes
    assert r["peak_flop_per_cycle"] == 64
    # bytes: 4 * D * (2*N*heads + 2*N*kv_heads)
    assert r["bytes_min"] == 4 * 64 * (2 * 64 * 32 + 2 * 64 * 4)
    assert r["max_rel_err"] == pytest.approx(2e-5) and r["pass"] is True
    assert r["has_vec_timing"] and r["lane_util"] == pytest.approx(0.7)
    assert r["vec_busy_SimdFloatMultAcc"] == 250_000 and r["vec_busy_SimdMisc"] == 0
    assert r["vec_element_bits"] == 100 * 24 * 32  # 100 micro-ops of 24 fp32 elements
    v = _row(df, "vec-512-8")
    assert not v["has_vec_timing"] and math.isnan(v["lane_util"])
    # these stats have no cache groups: unknown, not zero misses
    assert math.isnan(r["l1d_misses"]) and math.isnan(r["l2_misses"])


def test_failed_qemu_and_corrupt_runs_are_kept_but_not_usable(sweep: Path) -> None:
    df = collect(sweep).df
    failed = _row(df, "fav-2048-8")
    assert failed["status"] == "gem5-error" and not failed["usable"]
    assert "panic" in failed["cause"]
    q = _row(df, "qemu-fav-512")
    assert q["target"] == "qemu" and q["status"] == "ok" and not q["usable"]
    assert math.isnan(q["cycles"])
    assert q["flops"] > 0  # shape metrics still there
    bad = _row(df, "fav-4096-16")
    assert bad["status"] == "ok" and not bad["usable"]
    assert "truncated" in bad["analysis_error"]
    assert "runs/fav-4096-16/stats.txt" in bad["analysis_error"]
    ft = runs.failed_runs(df)
    assert set(ft["id"]) == {"fav-2048-8", "fav-4096-16"}


def test_speedups_match_hand_computed_values(sweep: Path) -> None:
    t = speedup.speedup_table(collect(sweep).df).set_index("id")
    # fa-v 1024/16: 2.5M cycles; scalar 100M (matches any VLEN/lanes); ggml-vec 1024/16 20M
    assert t.loc["fav-1024-16", "speedup_vs_ggml-scalar"] == pytest.approx(40.0)
    assert t.loc["fav-1024-16", "speedup_vs_ggml-vec"] == pytest.approx(8.0)
    assert t.loc["fav-1024-8", "speedup_vs_ggml-vec"] == pytest.approx(19 / 4.5)
    assert t.loc["fav-512-8", "speedup_vs_ggml-scalar"] == pytest.approx(20.0)
    assert t.loc["vec-1024-8", "speedup_vs_ggml-scalar"] == pytest.approx(100 / 19)
    # failed / corrupt / qemu / q8 runs are not in the attention speedup table
    assert not {"fav-2048-8", "fav-4096-16", "qemu-fav-512", "q8-ggml-512"} & set(t.index)


def test_vl_scaling_vs_512(sweep: Path) -> None:
    t = speedup.vl_scaling_table(collect(sweep).df)
    t = t[t["kernel"] == "fa-v"].set_index(["vlen", "lanes"])
    assert t.loc[(1024, 16), "speedup_vs_vlen512"] == pytest.approx(4.0 / 2.5)
    assert t.loc[(1024, 8), "speedup_vs_vlen512"] == pytest.approx(5.0 / 4.5)
    assert t.loc[(512, 8), "speedup_vs_vlen512"] == pytest.approx(1.0)


def test_q8_breakdown_both_methods(sweep: Path) -> None:
    t = cycles.q8_breakdown_table(collect(sweep).df).set_index("kernel")
    p = t.loc["q8-packed"]  # busyCycles 280/320/400 of 1000 cycles
    assert p["method"] == "busyCycles"
    assert (p["packing"], p["reduction"], p["mac"], p["other"]) == pytest.approx(
        (0.28, 0.32, 0.40, 0.0))
    g = t.loc["q8-ggml"]  # 10*2, 20*4, 30*5 of 1000 cycles
    assert g["method"] == "uops x latency"
    assert (g["packing"], g["reduction"], g["mac"], g["other"]) == pytest.approx(
        (0.02, 0.08, 0.15, 0.75))


def test_scalar_baseline_with_absent_vector_axes(tmp_path: Path) -> None:
    """As the sweep planner writes it: a scalar run has vlen/lanes/timing_model = null."""
    root = tmp_path / "s"
    ax = attn_axes("ggml-scalar", 512, 8)
    ax.update({"vlen": None, "lanes": None, "timing_model": None})
    write_run(root, "sc", ax, stats=synth.roi_stats_text(9000, 10, filler=False),
              result=attn_result("ggml-scalar", 0))
    write_run(root, "fv", attn_axes("fa-v", 2048, 32),
              stats=synth.roi_stats_text(300, 10, filler=False),
              result=attn_result("fa-v", 2048))
    t = speedup.speedup_table(collect(root).df).set_index("id")
    assert t.loc["fv", "speedup_vs_ggml-scalar"] == pytest.approx(30.0)
    assert math.isnan(t.loc["fv", "speedup_vs_ggml-vec"])


def test_incremental_cache(sweep: Path) -> None:
    first = collect(sweep)
    assert first.parsed == 14 and first.reused == 0
    assert (sweep / "collected.csv").exists()
    second = collect(sweep)
    assert second.parsed == 0 and second.reused == 14
    cols = ["id", "status", "cycles", "vlen", "lanes", "kernel", "usable"]
    pd.testing.assert_frame_equal(first.df[cols], second.df[cols], check_dtype=False)
    for fn in (speedup.speedup_table, speedup.vl_scaling_table, cycles.q8_breakdown_table,
               runs.failed_runs):
        pd.testing.assert_frame_equal(fn(first.df), fn(second.df), check_dtype=False)
    # a new run is picked up, the others come from the cache
    write_run(sweep, "fav-2048-16", attn_axes("fa-v", 2048, 16),
              stats=synth.roi_stats_text(2_000_000, 10, filler=False),
              result=attn_result("fa-v", 2048))
    third = collect(sweep)
    assert third.parsed == 1 and third.reused == 14
    assert _row(third.df, "fav-2048-16")["cycles"] == 2_000_000
    # a changed status.json (rerun) is parsed again
    d = sweep / "runs" / "fav-2048-8"
    (d / "stats.txt").write_text(synth.roi_stats_text(3_000_000, 10, filler=False))
    (d / "result.json").write_text(json.dumps(attn_result("fa-v", 2048)))
    st = json.loads((d / "status.json").read_text())
    st["status"] = "ok"
    (d / "status.json").write_text(json.dumps(st))
    os.utime(d / "status.json", ns=(1, 2_000_000_000_000_000_000))
    fourth = collect(sweep)
    assert fourth.parsed == 1
    r = _row(fourth.df, "fav-2048-8")
    assert r["status"] == "ok" and r["usable"] and r["cycles"] == 3_000_000
    # a removed run disappears
    import shutil

    shutil.rmtree(sweep / "runs" / "fav-2048-16")
    assert "fav-2048-16" not in set(collect(sweep).df["id"])


def test_broken_json_files_are_flagged(tmp_path: Path) -> None:
    root = tmp_path / "s"
    d = write_run(root, "x", attn_axes("fa-v", 512, 8),
                  stats=synth.roi_stats_text(100, 10, filler=False))
    (d / "run.json").write_text("{not json")
    write_run(root, "y", attn_axes("fa-v", 512, 8))
    (root / "runs" / "y" / "status.json").unlink()
    df = collect(root).df
    x, y = _row(df, "x"), _row(df, "y")
    assert "run.json: not valid JSON" in x["analysis_error"] and not x["usable"]
    assert y["status"] == "incomplete" and not y["usable"]


def test_collect_errors_and_cli(tmp_path: Path, sweep: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CollectError, match="no such results folder"):
        collect(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    assert main(["collect", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no runs/ folder" in err
    assert main(["collect", str(sweep)]) == 0
    assert "14 runs" in capsys.readouterr().out
    assert main(["tables", str(sweep)]) == 0
    for name in ("speedup", "vl_scaling", "q8_breakdown", "status", "failed", "validation"):
        for ext in ("csv", "md", "tex"):
            assert (sweep / "tables" / f"{name}.{ext}").stat().st_size > 0


def test_cli_subprocess_no_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    p = subprocess.run([sys.executable, "-m", "analysis", "report", str(tmp_path / "missing")],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and p.stderr.startswith("error: ")


def test_parallel_collect_equals_serial(sweep: Path) -> None:
    serial = collect(sweep, use_cache=False, write_cache=False, jobs=1).df
    par = collect(sweep, use_cache=False, write_cache=False, jobs=2, parallel_min=1).df
    pd.testing.assert_frame_equal(serial, par)


def test_single_dump_means_no_roi_dump(tmp_path: Path) -> None:
    root = tmp_path / "s"
    one = synth.stats_text([synth.dump_lines(5000, 100, filler=False)])
    write_run(root, "x", attn_axes("fa-v", 512, 8), stats=one)
    r = _row(collect(root).df, "x")
    assert not r["usable"] and "ROI dump is missing" in r["analysis_error"]


REAL = sorted((Path(__file__).parent / "data" / "real").glob("*.stats.txt.gz"))


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_gem5_run_collects(tmp_path: Path, path: Path) -> None:
    """A real gem5 run's stats.txt (kept from a smoke sweep) collects to a usable row whose
    cycles are the Minor core's ROI cycles and whose vector metrics come from the patch."""
    from analysis.stats import read_text, roi_dump

    kernel = path.name.split("_")[0]
    text = read_text(path)
    write_run(tmp_path, "real", {**attn_axes(kernel, 512, 8), "model": "tinyllama-1.1b"},
              stats=text, result=attn_result(kernel, 512))
    r = _row(collect(tmp_path, use_cache=False).df, "real")
    roi = roi_dump(path, 1)
    assert r["usable"] and r["n_dumps"] == 2
    assert r["cycles"] == roi.get("board.processor.switch.core.numCycles") > 0
    assert r["insts"] == roi.get("board.processor.switch.core.commitStats0.numInsts") > 0
    l1d = "board.cache_hierarchy.l1dcaches.demand"
    assert r["l1d_accesses"] == roi.get(l1d + "Accesses::total") > 0
    assert 0 < r["l1d_misses"] == roi.get(l1d + "Misses::total") < r["l1d_accesses"]
    assert r["l2_misses"] == roi.get("board.cache_hierarchy.l2cache.demandMisses::total")
    if kernel != "ggml-scalar":
        assert r["has_vec_timing"] and r["vec_uops_total"] > 0 and r["vec_busy_total"] > 0
        assert 0 < r["lane_util"] <= 1
        # fp32 kernels: elementBits is 32 x the arithmetic classes' elements, as collected
        assert r["vec_element_bits"] == 32 * r["vec_elems_arith"] > 0
        assert 0 < r["vec_timing_uops_arith"] < r["vec_timing_uops_total"]
    else:
        assert r["vec_uops_total"] == 0
    from analysis.cycles import cycle_accounting_table

    acc = cycle_accounting_table(collect(tmp_path).df).iloc[0]
    assert acc["scalar_ops"] + acc["vector_uops"] + acc["vsetvl"] == r["ops"]
    assert acc["ipc"] == pytest.approx(r["ops"] / r["cycles"])
    if kernel == "ggml-scalar":
        assert acc["vector_uops"] == 0 and acc["scalar_ops"] == r["ops"]
    else:
        assert acc["vector_uops"] > 0 and acc["vsetvl"] > 0
        assert acc["vec_busy_share"] == pytest.approx(r["vec_busy_total"] / r["cycles"])
    assert acc["l1d_miss_rate"] == pytest.approx(r["l1d_misses"] / r["l1d_accesses"])
    assert acc["l2_misses"] == r["l2_misses"]


def test_scalar_run_shared_by_two_uarchs_is_every_uarchs_baseline(tmp_path: Path) -> None:
    """The planner gives uarchs that agree around the vector unit one scalar run; points.json
    says so, and the speedup table then finds that baseline for both uarchs' vector runs."""
    scalar_axes = {**attn_axes("ggml-scalar", 0, 0), "uarch": "paper-vl-scaled", "vlen": None,
                   "lanes": None, "timing_model": None}
    write_run(tmp_path, "scalar", scalar_axes, stats=synth.roi_stats_text(4000, 4000),
              result=attn_result("ggml-scalar", 0))
    points = [{"axes": {**scalar_axes, "uarch": u}, "run": "scalar"}
              for u in ("paper-vl-scaled", "vitruvius-plus")]
    for u, cyc in (("paper-vl-scaled", 100), ("vitruvius-plus", 200)):
        axes = {**attn_axes("fa-v", 512, 8), "uarch": u}
        write_run(tmp_path, f"fav-{u}", axes, stats=synth.roi_stats_text(cyc, cyc),
                  result=attn_result("fa-v", 512))
        points.append({"axes": axes, "run": f"fav-{u}"})
    (tmp_path / "points.json").write_text(json.dumps(points))
    df = collect(tmp_path, use_cache=False).df
    assert sorted(df[df["id"] == "scalar"]["uarch"]) == ["paper-vl-scaled", "vitruvius-plus"]
    sp = speedup.speedup_table(df).set_index("id")
    assert sp.loc["fav-paper-vl-scaled", "speedup_vs_ggml-scalar"] == pytest.approx(40.0)
    assert sp.loc["fav-vitruvius-plus", "speedup_vs_ggml-scalar"] == pytest.approx(20.0)
    assert runs.status_table(df)["runs"].sum() == 3  # still three runs


def test_layout_spread_per_point(tmp_path: Path) -> None:
    """Runs that differ only in stack_shift are one point: cycles at shift 0, min, max and
    spread; a sweep without stack shifts has no such table."""
    cycles = {("fa-v", 0): 1_000_000, ("fa-v", 16): 1_050_000, ("fa-v", 32): 990_000,
              ("ggml-vec", 0): 4_000_000, ("ggml-vec", 16): 4_000_000}
    for (kernel, shift), cyc in cycles.items():
        write_run(tmp_path, f"{kernel}-{shift}",
                  {**attn_axes(kernel, 512, 8), "stack_shift": shift},
                  stats=synth.roi_stats_text(cyc, cyc // 2),
                  result=attn_result(kernel, 512))
    t = studies.layout_spread_table(collect(tmp_path, use_cache=False).df)
    fav = t[t["kernel"] == "fa-v"].iloc[0]
    assert fav["shifts"] == 3 and fav["cycles_shift0"] == 1_000_000
    assert (fav["cycles_min"], fav["cycles_max"]) == (990_000, 1_050_000)
    assert fav["spread"] == pytest.approx(1_050_000 / 990_000 - 1)
    assert t[t["kernel"] == "ggml-vec"].iloc[0]["spread"] == 0
    # the speedup pairs runs of the same shift
    sp = speedup.speedup_table(collect(tmp_path).df)
    at16 = sp[(sp["kernel"] == "fa-v") & (sp["stack_shift"] == 16)].iloc[0]
    assert at16["speedup_vs_ggml-vec"] == pytest.approx(4_000_000 / 1_050_000)


def test_no_layout_spread_without_shifts(sweep: Path) -> None:
    assert studies.layout_spread_table(collect(sweep).df).empty


def test_vl_fill_from_known_counts(tmp_path: Path) -> None:
    """100 FMA micro-ops with 3200 fp32 elements at VLEN 2048: 32 elements (1024 bits) per
    micro-op, VLMAX 64, fill 50%. Strided-load micro-ops (one element each) lower the mean
    over all micro-ops but not the fill, which elementBits takes over arithmetic ones only;
    a run without vecTiming stats and a scalar run without vector micro-ops are left out."""
    arith = ({"SimdFloatMultAcc": 100}, {"SimdFloatMultAcc": 3200})
    vt = synth.vec_timing_stats(*arith)
    assert vt["elementBits"] == 102400
    write_run(tmp_path, "fav", attn_axes("fa-v", 2048, 8),
              stats=synth.roi_stats_text(1000, 500, vec_timing=vt, filler=False))
    mem = synth.vec_timing_stats({**arith[0], "SimdStridedLoad": 60},
                                 {**arith[1], "SimdStridedLoad": 60})
    write_run(tmp_path, "vec", attn_axes("ggml-vec", 2048, 8),
              stats=synth.roi_stats_text(1000, 500, vec_timing=mem, filler=False))
    write_run(tmp_path, "no-vt", attn_axes("ggml-vec", 1024, 8),
              stats=synth.roi_stats_text(1000, 500, filler=False))
    write_run(tmp_path, "scalar", attn_axes("ggml-scalar", 2048, 8),
              stats=synth.roi_stats_text(1000, 500, vec_timing={"elementBits": 0},
                                         filler=False))
    df = collect(tmp_path).df
    assert _row(df, "fav")["vec_element_bits"] == 102400
    assert math.isnan(_row(df, "no-vt")["vec_element_bits"])
    t = cycles.vl_fill_table(df).set_index("kernel")
    assert set(t.index) == {"fa-v", "ggml-vec"}  # no-vt and scalar left out
    f = t.loc["fa-v"]
    assert f["vector_uops"] == 100 and f["elems_per_uop"] == 32 and f["vlmax_e32"] == 64
    assert f["bits_per_arith_uop"] == 1024 and f["fill_pct"] == pytest.approx(50.0)
    v = t.loc["ggml-vec"]
    assert v["vector_uops"] == 160 and v["elems_per_uop"] == pytest.approx(3260 / 160)
    assert v["arith_uops"] == 100 and v["fill_pct"] == pytest.approx(50.0)


def test_regime_table_sets_regimes_side_by_side(tmp_path: Path) -> None:
    """Cycles per regime at each point, the fastest, and its gain over blocked; a packed
    request the workload ran blocked (VLMAX <= D) is left out, ggml runs are ignored."""
    cycles = {(512, "blocked"): 1000, (512, "rows"): 500, (512, "packed"): 999,
              (8192, "blocked"): 800, (8192, "rows"): 400, (8192, "packed"): 200}
    for (vlen, regime), cyc in cycles.items():
        ran = "blocked" if (vlen, regime) == (512, "packed") else regime
        write_run(tmp_path, f"{regime}-{vlen}", {**attn_axes("fa-v", vlen, 8), "regime": regime},
                  stats=synth.roi_stats_text(cyc, cyc // 2, filler=False),
                  result={**attn_result("fa-v", vlen), "regime": ran})
    write_run(tmp_path, "vec", attn_axes("ggml-vec", 512, 8),
              stats=synth.roi_stats_text(3000, 1500, filler=False),
              result=attn_result("ggml-vec", 512))
    for vlen, ran in ((512, "rows"), (8192, "blocked")):  # auto: 8192 picked the slower
        cyc = cycles[(vlen, ran)]
        write_run(tmp_path, f"auto-{vlen}", {**attn_axes("fa-v", vlen, 8), "regime": "auto"},
                  stats=synth.roi_stats_text(cyc, cyc // 2, filler=False),
                  result={**attn_result("fa-v", vlen), "regime": ran})
    t = studies.regime_table(collect(tmp_path).df).set_index("vlen")
    assert list(t.columns[-8:]) == ["auto", "blocked", "packed", "rows", "best",
                                    "best_vs_blocked", "auto_ran", "auto_vs_best"]
    assert t.loc[512, "auto_ran"] == "rows" and t.loc[512, "auto_vs_best"] == 1.0
    assert t.loc[8192, "auto_ran"] == "blocked" and t.loc[8192, "auto_vs_best"] == 4.0
    assert math.isnan(t.loc[512, "packed"]) and t.loc[8192, "packed"] == 200
    assert t.loc[512, "best"] == "rows" and t.loc[512, "best_vs_blocked"] == 2.0
    assert t.loc[8192, "best"] == "packed" and t.loc[8192, "best_vs_blocked"] == 4.0
    only_vec = tmp_path / "vec-only"
    write_run(only_vec, "vec", attn_axes("ggml-vec", 512, 8),
              stats=synth.roi_stats_text(3000, 1500, filler=False),
              result=attn_result("ggml-vec", 512))
    assert studies.regime_table(collect(only_vec).df).empty


@pytest.mark.parametrize("name, damage", [
    ("stats.txt", lambda p: p.write_text(p.read_text()[:40])),          # truncated
    ("stats.txt", lambda p: p.unlink()),                                 # deleted
    ("result.json", lambda p: p.write_bytes(b"\xff\xfe garbage")),      # not JSON
    ("run.json", lambda p: p.write_text("{")),                           # cut short
])
def test_cache_notices_a_damaged_file(sweep: Path, name: str, damage) -> None:
    """A run whose stats, result or run file changed after it was cached is parsed again
    (its status.json untouched, with its old mtime), and shows up as not usable."""
    assert collect(sweep).parsed == 14
    d = sweep / "runs" / "fav-1024-16"
    assert _row(collect(sweep).df, "fav-1024-16")["usable"]
    st = (d / "status.json").stat()
    damage(d / name)
    os.utime(d / "status.json", ns=(st.st_atime_ns, st.st_mtime_ns))
    again = collect(sweep)
    assert again.parsed == 1 and again.reused == 13
    r = _row(again.df, "fav-1024-16")
    assert not r["usable"] and name in r["analysis_error"]
