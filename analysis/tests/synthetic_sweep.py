"""Synthetic results folders for the analysis tests (no gem5 needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from analysis import synth

MODEL = "tinyllama-1.1b"  # 32 heads, 4 KV heads, head_dim 64
N = 64

# (id, kernel, vlen, lanes, cycles): the speedups in the tests are computed from these.
ATTN_RUNS = [
    ("scalar", "ggml-scalar", 512, 8, 100_000_000),
    ("vec-512-8", "ggml-vec", 512, 8, 20_000_000),
    ("vec-512-16", "ggml-vec", 512, 16, 20_000_000),
    ("vec-1024-8", "ggml-vec", 1024, 8, 19_000_000),
    ("vec-1024-16", "ggml-vec", 1024, 16, 20_000_000),
    ("fav-512-8", "fa-v", 512, 8, 5_000_000),
    ("fav-512-16", "fa-v", 512, 16, 4_000_000),
    ("fav-1024-8", "fa-v", 1024, 8, 4_500_000),
    ("fav-1024-16", "fa-v", 1024, 16, 2_500_000),
]

#: active fp32 elements per fa-v micro-op: 16 of 16 at 512 bits (100%), 24 of 32 (75%)
FILL_ELEMS = {512: 16, 1024: 24}


def write_run(root: Path, rid: str, axes: dict[str, Any], *, status: str = "ok",
              cause: str = "", target: str = "gem5", stats: str | None = None,
              result: dict[str, Any] | None = None, system: dict[str, Any] | None = None,
              roi_dump: int = 1) -> Path:
    d = root / "runs" / rid
    d.mkdir(parents=True, exist_ok=True)
    sysd = {"uarch": axes.get("uarch", "minor-rvv"), "vlen": axes.get("vlen"),
            "lanes": axes.get("lanes"), "lane_bits": 64, "clock": "2GHz",
            "timing_model": axes.get("timing_model"), "op_latency": {}}
    sysd.update(system or {})
    run = {"schema": 1, "target": target, "axes": axes,
           "system": None if target == "qemu" else sysd,  # as sweeps/runjson.py writes
           "workload": {"binary": "attention", "args": []}, "roi_dump": roi_dump}
    (d / "run.json").write_text(json.dumps(run))
    if stats is not None:
        (d / "stats.txt").write_text(stats)
    if result is None and status == "ok":
        result = {"pass": True}  # the runner never records ok without the result line
    if result is not None:
        (d / "result.json").write_text(json.dumps(result))
    (d / "status.json").write_text(json.dumps(
        {"status": status, "cause": cause, "stderr_tail": "", "wall_s": 1.5,
         "exit_code": 0 if status == "ok" else 1, "target": target, "provenance": {}}))
    return d


def attn_axes(kernel: str, vlen: int, lanes: int, phase: str = "prefill") -> dict[str, Any]:
    return {"uarch": "minor-rvv", "vlen": vlen, "lanes": lanes, "timing_model": "lanes",
            "kernel": kernel, "precision": "fp32", "model": MODEL, "phase": phase, "n": N}


def attn_result(kernel: str, vlen: int) -> dict[str, Any]:
    return {"workload": "attention", "kernel": kernel, "model": MODEL, "heads": 32,
            "kv_heads": 4, "head_dim": 64, "phase": "prefill", "n": N, "precision": "fp32",
            "vlen": vlen, "max_abs_err": 1e-6, "max_rel_err": 2e-5, "pass": True}


def build_sweep(root: Path) -> Path:
    for rid, kernel, vlen, lanes, cycles in ATTN_RUNS:
        itype = {"IntAlu": cycles // 4, "SimdFloatMultAcc": 100 if kernel != "ggml-scalar"
                 else 0}
        # fa-v: 100 FMA micro-ops of FILL_ELEMS[vlen] fp32 elements each
        vt = (synth.vec_timing_stats(
            {"SimdFloatMultAcc": 100}, {"SimdFloatMultAcc": 100 * FILL_ELEMS[vlen]},
            busyCycles={"SimdFloatMultAcc": cycles // 10},
            laneUtilization=0.9 if vlen == 512 else 0.7) if kernel == "fa-v" else None)
        write_run(root, rid, attn_axes(kernel, vlen, lanes),
                  stats=synth.roi_stats_text(cycles, cycles // 2, inst_type=itype,
                                             vec_timing=vt, filler=False),
                  result=attn_result(kernel, vlen))
    # a failed gem5 run
    write_run(root, "fav-2048-8", attn_axes("fa-v", 2048, 8), status="gem5-error",
              cause="panic: unknown instruction", stats="")
    # a functional qemu run: no stats
    write_run(root, "qemu-fav-512", attn_axes("fa-v", 512, 8), target="qemu",
              result=attn_result("fa-v", 512))
    # status ok but stats.txt cut mid-line: flagged, not usable
    good = synth.roi_stats_text(30_000, 1000)
    write_run(root, "fav-4096-16", attn_axes("fa-v", 4096, 16), stats=good[:len(good) // 3])
    # Q8_0: with the patch's busyCycles, and without (uops x op latency)
    q8 = {"uarch": "minor-rvv", "timing_model": "lanes", "precision": "fp32",
          "model": MODEL, "lanes": 8}
    write_run(root, "q8-packed-2048", {**q8, "kernel": "q8-packed", "vlen": 2048},
              stats=synth.roi_stats_text(
                  1000, 800, inst_type={"SimdMisc": 70, "SimdReduceAdd": 40,
                                        "SimdMultAcc": 50, "IntAlu": 300},
                  vec_timing={"busyCycles": {"SimdMisc": 280, "SimdReduceAdd": 320,
                                             "SimdMultAcc": 400, "SimdConfig": 0},
                              "laneUtilization": 0.61}),
              result={"workload": "q8", "kernel": "q8-packed", "rows": 64, "cols": 2048,
                      "pass": True, "max_abs_err": 0.0, "max_rel_err": 0.0})
    write_run(root, "q8-ggml-512", {**q8, "kernel": "q8-ggml", "vlen": 512,
                                    "timing_model": "fixed"},
              stats=synth.roi_stats_text(
                  1000, 800, inst_type={"SimdMisc": 10, "SimdReduceAdd": 20,
                                        "SimdMultAcc": 30, "IntAlu": 300}),
              system={"op_latency": {"SimdMisc": 2, "SimdReduceAdd": 4, "SimdMultAcc": 5}},
              result={"workload": "q8", "kernel": "q8-ggml", "rows": 64, "cols": 2048,
                      "pass": True, "max_abs_err": 0.0, "max_rel_err": 0.0})
    return root
