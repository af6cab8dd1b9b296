"""Timing microbenchmark: what each vector timing model predicts, and what gem5 measures.

`python -m tools.vbench table [-j N] [--out DIR]` runs workloads/build/vbench in gem5 over
VLEN {512..8192} x lanes {8..64} x the shipped uarchs x ops x {chain, indep} x vl {max, half}
and writes configs/data/vbench.csv (+ .md): measured steady-state cycles per instruction
(the ROI cycles of a 100-iteration run minus those of a 20-iteration run, per instruction)
beside the model's prediction. Needs gem5: $GEM5, else the `make gem5` build.

Predictions (one micro-op per instruction at e32/m1, see gem5-patches/README.md): the
latency L of each timing model (system/latency.py) with occ = ceil(vl * 32 / (lanes *
lane_bits)) the lanes model's occupancy, and
  chain CPI = L;  indep CPI = max(1, L / 8) for pipelined models, max(1, occ, L / 8) for lanes
  (8 independent destinations per round). Results delay dependents only (decoupled vector
  unit), so independent ops issue back to back.
  vsetvli: CPI 1 whether it keeps vl/vtype (indep) or toggles vtype (chain), unless the core
  flushes its pipeline on it (what the row measures).
"""

from __future__ import annotations

import csv
import math
import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from sweeps.runjson import make_run_json
from system.gem5find import Gem5Error, find_gem5
from system.latency import occupancy
from system.latency import predicted_latency as op_latency
from system.loader import load_uarch
from system.resolved import resolve
from tools.one import simulate
from vecscale.cmdline import OneLineParser, folder_problem
from vecscale.vocab import MEM_BYTES_PER_CYCLE, REPO

DATA = Path(REPO) / "configs" / "data"
UARCHS = ("paper-fixed", "paper-vl-scaled", "vitruvius-plus")
VLENS = (512, 1024, 2048, 4096, 8192)
LANES = (8, 16, 32, 64)
OPS = {
    "vfadd": "SimdFloatAdd",
    "vfmacc": "SimdFloatMultAcc",
    "vfredusum": "SimdFloatReduceAdd",
    "vslideup": "SimdMisc",
    "vle32": "SimdUnitStrideLoad",
    "vse32": "SimdUnitStrideStore",
    "vsetvli": "SimdConfig",
}
ARITH = ("vfadd", "vfmacc", "vfredusum", "vslideup")
#: ops run both ways; for vsetvli "indep" keeps vl/vtype and "chain" toggles vtype
TWO_WAY = (*ARITH, "vsetvli")
INDEP_REGS = 8
#: two runs per point; CPI = (cycles(long) - cycles(short)) / (128 * (long - short)) removes
#: what does not repeat per iteration (cold caches and predictor after the CPU switch,
#: set-up and check code inside the ROI)
ITERS_SHORT, ITERS_LONG = 20, 100
INSTS_PER_ITER = 128


def active_elems(vlen: int, vl: str) -> int:
    vlmax = vlen // 32
    return vlmax if vl == "max" else max(1, vlmax // 2)


def predicted_latency(system: dict[str, Any], op: str, vl: str) -> int:
    """The timing model's latency of one vbench op at vl "max" or "half" (e32, m1)."""
    return op_latency(system, OPS[op], active_elems(system["vlen"], vl))


def predicted_cpi(system: dict[str, Any], op: str, dep: str, vl: str) -> float:
    if op == "vsetvli":
        return 1.0  # writes only a scalar register nobody reads: one per cycle unless flushed
    active = active_elems(system["vlen"], vl)
    if op not in ARITH:
        # unit-stride loads/stores of L1-resident data: the Minor LSQ moves one cache-line
        # fragment per cycle (all models; vector memory is not lane-timed)
        return float(max(1, math.ceil(active * 4 / MEM_BYTES_PER_CYCLE)))
    lat = predicted_latency(system, op, vl)
    if dep == "chain":
        return float(lat)
    floor = 1.0
    if system["timing_model"] == "lanes":
        floor = max(floor, occupancy(active, 32, int(system.get("lanes") or 1),
                                     int(system.get("lane_bits") or 64)))
    return max(floor, lat / INDEP_REGS)


def points(uarchs=UARCHS, vlens=VLENS, lanes=LANES, ops=tuple(OPS)) -> list[dict[str, Any]]:
    out = []
    for u in uarchs:
        ua = load_uarch(u)
        for v in vlens:
            for la in (lanes if not ua.ignores_lanes else (lanes[0],)):
                system = resolve(ua, v, la)
                for op in ops:
                    for dep in ("chain", "indep") if op in TWO_WAY else ("indep",):
                        for vl in ("max", "half"):
                            out.append({"uarch": u, "vlen": v, "lanes": la, "op": op,
                                        "dep": dep, "vl": vl, "system": system})
    return out


def _roi_cycles(gem5: str, point: dict[str, Any], iters: int, rundir: Path) -> int:
    from analysis.stats import roi_dump

    args = ["--op", point["op"], "--dep", point["dep"], "--vl", point["vl"],
            "--iters", str(iters), "--roi", "m5"]
    run = make_run_json(target="gem5", system=point["system"], binary="vbench", args=args,
                        axes={k: point[k] for k in ("uarch", "vlen", "lanes")})
    code = simulate(gem5, rundir, run, quiet=True)
    if code is None:
        tail = (rundir / "simerr").read_text()[-400:] if (rundir / "simerr").is_file() else ""
        raise RuntimeError(f"{rundir.name}: gem5 failed: {tail}")
    if code != 0:
        raise RuntimeError(f"{rundir.name}: vbench self-check failed (see {rundir}/simout)")
    dump = roi_dump(rundir / "stats.txt", 1)
    return int(dump.get(dump.cpu() + ".numCycles"))


def run_point(gem5: str, point: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Simulate one point twice (short and long loop); returns the table row (measured
    steady-state CPI and the model's prediction)."""
    name = "{uarch}-{vlen}-{lanes}-{op}-{dep}-{vl}".format(**point)
    short = _roi_cycles(gem5, point, ITERS_SHORT, workdir / f"{name}-short")
    long_ = _roi_cycles(gem5, point, ITERS_LONG, workdir / f"{name}-long")
    row = {k: point[k] for k in ("uarch", "vlen", "lanes", "op", "dep", "vl")}
    row["timing_model"] = point["system"]["timing_model"]
    row["cycles_short"] = short
    row["cycles_long"] = long_
    row["cpi"] = round((long_ - short) / ((ITERS_LONG - ITERS_SHORT) * INSTS_PER_ITER), 4)
    row["predicted_cpi"] = round(predicted_cpi(point["system"], point["op"], point["dep"],
                                               point["vl"]), 4)
    return row


def write_table(rows: list[dict[str, Any]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: (r["uarch"], r["op"], r["dep"], r["vl"], r["vlen"],
                                       r["lanes"]))
    cols = list(rows[0])
    with open(out / "vbench.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    (out / "vbench.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = OneLineParser(prog="python -m tools.vbench")
    ap.add_argument("verb", choices=["table"])
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--out", type=Path, default=DATA)
    ns = ap.parse_args(argv)
    if problem := folder_problem(ns.out):  # before hours of simulation, not after
        print(f"error: --out {ns.out}: {problem}", file=sys.stderr)
        return 2
    try:
        gem5 = find_gem5()
    except Gem5Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    pts = points()
    with tempfile.TemporaryDirectory(prefix="vbench-") as tmp, \
            ThreadPoolExecutor(max_workers=ns.j) as pool:
        try:
            rows = list(pool.map(lambda p: run_point(gem5, p, Path(tmp)), pts))
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    write_table(rows, ns.out)
    print(f"wrote {ns.out / 'vbench.csv'} ({len(rows)} points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
