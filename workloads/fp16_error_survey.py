#!/usr/bin/env python3
"""Survey of the error the fp16 attention kernels make, under qemu-user (QEMU >= 10, Zvfh).

Runs each fp16 kernel (ggml-scalar, ggml-vec, and fa-v in each of its fp16 regimes: rows,
blocked, heads, dot) over model shapes, custom head dimensions, sequence lengths, VLENs and
seeds with --dump, recomputes attention in float64 with numpy from the dumped fp16
inputs and prints, per run and overall, the largest |o - ref|, the largest
|o - ref| - 2^-11 |ref| (what an absolute tolerance must cover once a relative term of one
fp16 rounding is allowed) and the largest |ref|. workloads/README.md ("fp16 tolerance")
quotes its output; the harness's ATOL_F16/RTOL_F16 (src/attention/main.c) come from it.

    python3 workloads/fp16_error_survey.py [--quick] [--jobs 2] [--csv FILE]
        [--kernels ggml-scalar,ggml-vec,fa-v]
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "workloads" / "build"
U16 = 2.0 ** -11  # unit roundoff of fp16
KERNELS = ("ggml-scalar", "ggml-vec", "fa-v")
FAV_REGIMES = ("rows", "blocked", "heads", "dot")  # fa-v's fp16 regimes, each surveyed


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool) -> np.ndarray:
    n_q, heads, d = q.shape
    n_kv, kv_heads, _ = k.shape
    g = heads // kv_heads
    kk, vv = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("ihd,jhd->hij", q, kk) / np.sqrt(d)
    if causal:
        s = np.where((np.arange(n_kv)[None, :] > np.arange(n_q)[:, None] + n_kv - n_q)[None],
                     -np.inf, s)
    w = np.exp(s - s.max(axis=2, keepdims=True))
    return np.einsum("hij,jhd->ihd", w / w.sum(axis=2, keepdims=True), vv)


def one(case: tuple[str, int, list[str]]) -> dict:
    name, vlen, args = case
    kernel = name.split("/")[0]  # fa-v/<regime>
    binary = {"ggml-scalar": "attention-scalar-fp16", "ggml-vec": "attention-ggml-vec-fp16",
              "fa-v": "attention-fa-v-fp16"}[kernel]
    if kernel == "fa-v":
        args = [*args, "--regime", name.split("/")[1]]
    with tempfile.TemporaryDirectory() as tmp:
        cpu = f"rv64,v=true,zvfh=true,vlen={vlen},elen=64,vext_spec=v1.0"
        proc = subprocess.run(["qemu-riscv64", "-cpu", cpu, str(BUILD / binary), "--kernel",
                               kernel, "--precision", "fp16", *args, "--dump", tmp],
                              capture_output=True, text=True, timeout=3600)
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if not line:
            raise SystemExit(f"{kernel} {args}: exit {proc.returncode}: {proc.stderr.strip()}")
        rec = json.loads(line[0])
        meta = json.loads((Path(tmp) / "meta.json").read_text())
        a = {x: np.fromfile(Path(tmp) / f"{x}.bin", dtype="<f2").astype(np.float64)
             .reshape(meta["shapes"][x]) for x in "qkvo"}
    ref = attention(a["q"], a["k"], a["v"], meta["causal"])
    err = np.abs(a["o"] - ref)
    return {"kernel": name, "vlen": vlen if kernel != "ggml-scalar" else 0,
            "args": " ".join(args), "d": meta["head_dim"], "n_kv": meta["n_kv"],
            "max_abs": float(err.max()), "excess": float((err - U16 * np.abs(ref)).max()),
            "max_ref": float(np.abs(ref).max()), "self_max_abs": rec["max_abs_err"]}


def cases(quick: bool, kernels: tuple[str, ...] = KERNELS) -> list[tuple[str, int, list[str]]]:
    models = sorted(yaml.safe_load((ROOT / "workloads" / "models.yaml").read_text()))
    prefill = (12, 128) if quick else (12, 128, 512)
    decode = (40, 1024) if quick else (40, 1024, 8192)
    seeds = (1,) if quick else (1, 2, 3)
    shapes = [["--model", m] for m in models]
    shapes += [["--heads", "8", "--kv-heads", "2", "--head-dim", str(d)] for d in (8, 16, 32, 256)]
    out = []
    for shape in shapes:
        for seed in seeds:
            lens = [["--n", str(n)] for n in prefill] + \
                   [["--phase", "decode", "--l", str(ln)] for ln in decode]
            for ln in lens:
                if seed > 1 and ln[-1] == "512":
                    continue  # the longest prefill once per shape: it is the slowest
                args = [*shape, *ln, "--seed", str(seed)]
                if "ggml-scalar" in kernels:
                    out.append(("ggml-scalar", 128, args))
                if "ggml-vec" in kernels:
                    for vlen in ((512,) if quick else (128, 512, 1024)):
                        out.append(("ggml-vec", vlen, args))
                # fa-v: every fp16 regime at the shortest and longest VLEN, one seed, up
                # to N = 128 (each regime's error does not grow with length: below)
                if "fa-v" in kernels and seed == 1 and ln[-1] != "512":
                    for vlen in ((512,) if quick else (128, 1024)):
                        out.extend((f"fa-v/{r}", vlen, args) for r in FAV_REGIMES)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smaller grid")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--csv", type=Path, help="write every run's row here")
    ap.add_argument("--kernels", default=",".join(KERNELS),
                    help="comma-separated kernels to survey (default: all)")
    ns = ap.parse_args()
    kernels = tuple(ns.kernels.split(","))
    if not kernels or set(kernels) - set(KERNELS):
        ap.error(f"--kernels: expected some of {', '.join(KERNELS)}")
    todo = cases(ns.quick, kernels)
    with ThreadPoolExecutor(ns.jobs) as pool:
        rows = list(pool.map(one, todo))
    if ns.csv:
        with ns.csv.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    for kernel in dict.fromkeys(r["kernel"] for r in rows):
        rk = [r for r in rows if r["kernel"] == kernel]
        worst = max(rk, key=lambda r: r["max_abs"])
        worst_x = max(rk, key=lambda r: r["excess"])
        print(f"{kernel}: {len(rk)} runs; max |o-ref| {worst['max_abs']:.3g} ({worst['args']}, "
              f"vlen {worst['vlen']}); max |o-ref| - 2^-11|ref| {worst_x['excess']:.3g} "
              f"({worst_x['args']}); median of per-run max |o-ref| "
              f"{float(np.median([r['max_abs'] for r in rk])):.3g}")
        for n_kv in sorted({r["n_kv"] for r in rk}):
            sel = [r for r in rk if r["n_kv"] == n_kv]
            print(f"  n_kv {n_kv:5d}: {len(sel):3d} runs, max |o-ref| "
                  f"{max(r['max_abs'] for r in sel):.3g}, max excess "
                  f"{max(r['excess'] for r in sel):.3g}, max |ref| "
                  f"{max(r['max_ref'] for r in sel):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
