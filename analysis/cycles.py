"""Where the cycles go: the Q8_0 breakdown (packing, reduction, multiply-accumulate), the
cycle accounting of every run (instruction mix, vector unit busy, misses) and how full the
vectors are (vl_fill). Methods and formulas: analysis/README.md."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd

from system.latency import vl_scaled_latency
from vecscale.vocab import STOCK_FLOAT_SIMD_LATENCY, VECTOR_MEM_CLASSES
from workloads.kernels import Q8, family_of

from .select import LEAD_AXES, axis_columns, runs_once, usable

PACKING = {"SimdMisc"}  # vslideup/vslidedown/vrgather/vmv: gem5 files them as SimdMisc
REDUCTION = {"SimdReduceAdd", "SimdReduceAlu", "SimdReduceCmp", "SimdFloatReduceAdd",
             "SimdFloatReduceCmp"}
MAC = {"SimdAdd", "SimdAddAcc", "SimdMult", "SimdMultAcc", "SimdMatMultAcc", "SimdFloatAdd",
       "SimdFloatMult", "SimdFloatMultAcc", "SimdFloatMatMultAcc"}
CATEGORIES = {"packing": PACKING, "reduction": REDUCTION, "mac": MAC}


def _latency(oplat: dict[str, Any], cls: str, rec: dict[str, Any]) -> float:
    v = oplat.get(cls)
    if isinstance(v, dict):
        v = v.get("lat", v.get("latency", v.get("base")))
    lat = float(v) if isinstance(v, (int, float)) else float(STOCK_FLOAT_SIMD_LATENCY)
    if str(rec.get("timing_model")) == "vl-scaled" and cls not in VECTOR_MEM_CLASSES:
        vlen, lanes = float(rec.get("vlen") or 0), float(rec.get("lanes") or 0)
        lbits = float(rec.get("lane_bits") or 64)
        if vlen > 0 and lanes > 0:  # what the formula adds to a base latency
            lat += vl_scaled_latency(0, int(vlen), int(lanes), int(lbits))
    return lat


def q8_breakdown_table(df: pd.DataFrame) -> pd.DataFrame:
    """Share of ROI cycles in packing, reduction, multiply-accumulate and other, per Q8 run.

    Attribution: the patch's busyCycles per op class when the run has them; otherwise
    committed vector micro-ops x op latency (run.json system.op_latency, default 6).
    other = cycles - (packing + reduction + mac); if the attributed sum exceeds the cycles,
    the three are scaled to sum to 1 and other is 0. `<category>_of_vector` are the three
    as shares of their sum (the split of the vector work, comparable with the paper's).
    """
    u = usable(df)
    if u.empty or "kernel" not in u.columns:
        return pd.DataFrame()
    u = u[u["kernel"].astype(str).map(family_of) == Q8.name]
    axes = axis_columns(df)
    out = []
    for rec in u.to_dict("records"):
        busy = bool(rec.get("has_vec_timing")) and float(rec.get("vec_busy_total") or 0) > 0
        try:
            oplat = json.loads(rec.get("op_latency") or "{}")
        except (TypeError, ValueError):
            oplat = {}
        if not isinstance(oplat, dict):
            oplat = {}
        cyc: dict[str, float] = {}
        for cat, classes in CATEGORIES.items():
            s = 0.0
            for c in classes:
                if busy:
                    s += float(rec.get(f"vec_busy_{c}") or 0)
                else:
                    s += float(rec.get(f"vec_uops_{c}") or 0) * _latency(oplat, c, rec)
            cyc[cat] = s
        total = float(rec["cycles"])
        attributed = sum(cyc.values())
        denom = max(total, attributed)
        row = {a: rec.get(a) for a in axes}
        row["method"] = "busyCycles" if busy else "uops x latency"
        row["cycles"] = total
        for cat in CATEGORIES:
            row[cat] = cyc[cat] / denom if denom else math.nan
        row["other"] = max(0.0, total - attributed) / denom if denom else math.nan
        # the same three as shares of the vector work alone (the paper's packing / reduction
        # / MAC split sums to 100%): what the vector unit spends its time on
        for cat in CATEGORIES:
            row[f"{cat}_of_vector"] = cyc[cat] / attributed if attributed else math.nan
        out.append(row)
    t = pd.DataFrame(out)
    if t.empty:
        return t
    keys = [a for a in ("kernel", "vlen", "lanes", "timing_model") if a in t.columns]
    return t.sort_values(keys, kind="stable").reset_index(drop=True)


def instruction_mix(u: pd.DataFrame) -> pd.DataFrame:
    """Committed micro-ops of usable runs (columns ops, vec_uops_*): scalar_ops (every
    micro-op not of a Simd* class), vector_uops (Simd* but SimdConfig) and vsetvl
    (SimdConfig)."""
    cfg = u.get("vec_uops_SimdConfig", pd.Series(0.0, index=u.index)).fillna(0.0)
    return pd.DataFrame({"scalar_ops": u["ops"] - u["vec_uops_total"],
                         "vector_uops": u["vec_uops_total"] - cfg, "vsetvl": cfg},
                        index=u.index)


def cycle_accounting_table(df: pd.DataFrame) -> pd.DataFrame:
    """Where a run's cycles go, from the committed instruction mix and the patch's stats:
    scalar micro-ops, vector micro-ops and vsetvl (SimdConfig) per run, the core's IPC,
    the share of cycles some vector unit was busy (busyCycles summed over units, so it can
    exceed 1 when units overlap), the cycles micro-ops waited for a busy unit, and the L1D
    miss rate and L2 misses (demand accesses as gem5 counts them; the L2's include the L1D
    prefetcher's). A kernel whose scalar ops grow relative to its vector ops will not gain
    from longer vectors; one with many L2 misses waits for memory whatever the VLEN."""
    u = runs_once(usable(df))
    need = {"cycles", "ops", "vec_uops_total"}
    if u.empty or not need <= set(u.columns) or "workload" not in u.columns:
        return pd.DataFrame()
    u = u[u["workload"].isin(["attention", "q8"])]
    if u.empty:
        return pd.DataFrame()
    axes = [a for a in axis_columns(df) if a in u.columns and u[a].notna().any()
            and u[a].astype(str).nunique() > 1]
    t = u[axes].copy()
    cyc = u["cycles"].astype(float)
    t["cycles"] = cyc
    t["ipc"] = u["ops"] / cyc
    t = t.join(instruction_mix(u))
    t["scalar_per_vector"] = t["scalar_ops"] / t["vector_uops"].where(t["vector_uops"] > 0)
    busy = u.get("vec_busy_total", pd.Series(math.nan, index=u.index))
    has = u.get("has_vec_timing", pd.Series(False, index=u.index)).fillna(False).astype(bool)
    t["vec_busy_share"] = (busy / cyc).where(has)
    t["vec_wait_cycles"] = u.get("vec_wait_total", pd.Series(math.nan, index=u.index)
                                 ).where(has)
    t["lane_util"] = u.get("lane_util", pd.Series(math.nan, index=u.index)).where(has)
    nan = pd.Series(math.nan, index=u.index)
    l1d = u.get("l1d_accesses", nan).astype(float)
    t["l1d_miss_rate"] = u.get("l1d_misses", nan) / l1d.where(l1d > 0)
    t["l2_misses"] = u.get("l2_misses", nan)
    keys = [a for a in LEAD_AXES if a in t.columns]
    return t.sort_values(keys, kind="stable", na_position="first").reset_index(drop=True)


#: axes that change timing or layout, not the instructions a kernel commits: pooled in vl_fill
FILL_POOLED = {"lanes", "stack_shift"}
#: always shown (the size too, so that a reader knows which N / L a fill belongs to)
FILL_KEYS = ["kernel", "model", "phase", "n", "l", "vlen"]


def vl_fill_table(df: pd.DataFrame) -> pd.DataFrame:
    """How full the vectors are: per kernel, model, phase, VLEN (and any other axis the runs
    differ in, except lanes and stack_shift, whose runs are pooled by summing counts), from
    the patch's vecTiming stats of usable gem5 runs with vector micro-ops.

    A micro-op covers one vector register (gem5 splits an LMUL > 1 instruction into LMUL
    micro-ops). `vector_uops` and `elems_per_uop` count every vector micro-op, memory ones
    included: gem5 splits a strided or indexed access into one micro-op per element, so
    these means can be low without any arithmetic being short. elementBits sums active
    elements x SEW over the arithmetic micro-ops only, so the fill is taken over those:
    fill_pct = 100 * elementBits / (arith_uops * VLEN). vlmax_e32 = VLEN / 32 (LMUL 1)."""
    u = runs_once(usable(df))
    need = {"has_vec_timing", "vec_timing_uops_total", "vec_element_bits", "vlen"}
    if u.empty or not need <= set(u.columns):
        return pd.DataFrame()
    u = u[u["has_vec_timing"].fillna(False).astype(bool) & u["vlen"].notna()
          & (u["vec_timing_uops_total"].fillna(0) > 0)]
    if u.empty:
        return pd.DataFrame()
    extra = [a for a in axis_columns(df) if a in u.columns and a not in FILL_KEYS
             and a not in FILL_POOLED and u[a].notna().any() and u[a].astype(str).nunique() > 1]
    keys = [a for a in FILL_KEYS if a in u.columns and u[a].notna().any()] + extra
    g = u.groupby(keys, dropna=False, sort=False)
    t = g.agg(runs=("id", "size"), vector_uops=("vec_timing_uops_total", "sum"),
              elems=("vec_elems_total", "sum"), arith_uops=("vec_timing_uops_arith", "sum"),
              arith_elems=("vec_elems_arith", "sum"), bits=("vec_element_bits", "sum")
              ).reset_index()
    vlen = t["vlen"].astype(float)
    arith = t["arith_uops"].where(t["arith_uops"] > 0)
    t["elems_per_uop"] = t["elems"] / t["vector_uops"]
    t["elems_per_arith_uop"] = t["arith_elems"] / arith
    t["vlmax_e32"] = vlen / 32
    t["bits_per_arith_uop"] = t["bits"] / arith
    t["fill_pct"] = 100 * t["bits"] / (arith * vlen)
    t = t.drop(columns=["elems", "arith_elems", "bits"])
    lead = [a for a in LEAD_AXES if a in t.columns]
    return t.sort_values(lead, kind="stable", na_position="first").reset_index(drop=True)
